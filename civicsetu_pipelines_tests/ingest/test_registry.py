"""The document registry: the shipped YAML, the loader's validation, and the corpus pins."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pydantic
import pymupdf
import pytest
import yaml

from civicsetu_pipelines.base.settings import ENV_ENABLE_SEED_STATES, REPO_ROOT
from civicsetu_pipelines.ingest.registry import (
    DOCUMENTS_YAML,
    SEED_DOCUMENTS_YAML,
    DocumentSpec,
    PageRangeError,
    Registry,
    RegistryError,
    Status,
    load_registry,
    parse_registry_file,
)

CORPUS_DIR = REPO_ROOT.parent / "shared" / "corpus"
MANIFEST = CORPUS_DIR / "MANIFEST.tsv"

DEFAULT_KEYS = {
    "rera_act_2016",
    "rera_faq_2017",
    "gujarat_general_rules_2017",
    "gujarat_authority_rules_2016",
    "gujarat_appellate_tribunal_rules_2016",
    "chandigarh_general_rules_2016",
    "chandigarh_agreement_for_sale_rules_2016",
    "karnataka_agreement_for_sale_draft_rules_2017",
    "karnataka_penalty_order_2017",
    "rera_removal_of_difficulties_order_2016",
    "rera_commencement_notification_2017",
    "maharashtra_appellate_tribunal_regulations_2019",
    "mahareat_order_at10735_2018",
    "mahareat_order_at134203_2023",
    "mahareat_order_u8_2021",
    "neelkamal_v_union_bombay_hc_2017",
    "uttar_pradesh_rules_2016",
    "daman_and_diu_general_rules_2016",
}
DEFAULT_JURISDICTIONS = ["CENTRAL", "CHANDIGARH", "DAMAN_AND_DIU", "GUJARAT", "KARNATAKA",
                         "MAHARASHTRA", "UTTAR_PRADESH"]  # fmt: skip
SEED_KEYS = {
    "maharashtra_registration_rules_2017",
    "uttar_pradesh_general_regulations_2019",
    "karnataka_rules_2017",
    "tamil_nadu_rules_2017",
    "rera_act_2016_indiacode",
}


# ----------------------------------------------------------------------------- helpers


def _doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "key": "sample_rules_2020",
        "title": "Sample Rules, 2020",
        "jurisdiction": "GUJARAT",
        "doc_type": "rules",
        "effective_date": "2020-01-31",
        "source_url": "https://example.gov.in/sample.pdf",
        "download_urls": ["https://example.gov.in/sample.pdf"],
        "filename": "sample.pdf",
        "sha256": "ab" * 32,
        "page_ranges": [[1, 3]],
        "language": "eng",
        "status": "in_force",
        "notes": "test document",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not _DROP}


_DROP = object()


def _write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"schema_version": 1, "documents": docs}), encoding="utf-8")
    return path


def _spec(**overrides: Any) -> DocumentSpec:
    return DocumentSpec.model_validate(_doc(**overrides))


# ----------------------------------------------------------------------------- shipped registry


def test_default_registry_has_exactly_the_default_documents() -> None:
    registry = load_registry(include_seed=False)
    assert set(registry.keys()) == DEFAULT_KEYS
    assert registry.jurisdictions() == DEFAULT_JURISDICTIONS
    assert registry.sources == (DOCUMENTS_YAML,)
    assert all(spec.sha256 is not None for spec in registry.documents())


def test_seed_registry_adds_unpinned_seed_states() -> None:
    registry = load_registry(include_seed=True)
    assert set(registry.keys()) == DEFAULT_KEYS | SEED_KEYS
    assert registry.jurisdictions() == sorted([*DEFAULT_JURISDICTIONS, "TAMIL_NADU"])
    for key in SEED_KEYS:
        assert registry.get(key).sha256 is None, key
    assert registry.sources == (DOCUMENTS_YAML, SEED_DOCUMENTS_YAML)


def test_include_seed_none_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_ENABLE_SEED_STATES, "1")
    assert set(load_registry().keys()) >= SEED_KEYS
    monkeypatch.setenv(ENV_ENABLE_SEED_STATES, "0")
    assert not SEED_KEYS & set(load_registry().keys())
    monkeypatch.delenv(ENV_ENABLE_SEED_STATES)
    assert set(load_registry().keys()) == DEFAULT_KEYS


def test_documents_by_jurisdiction() -> None:
    registry = load_registry(include_seed=False)
    gujarat = registry.documents("GUJARAT")
    assert [d.key for d in gujarat] == [
        "gujarat_general_rules_2017",
        "gujarat_authority_rules_2016",
        "gujarat_appellate_tribunal_rules_2016",
    ]
    assert registry.documents("IN-CH") == registry.documents("CHANDIGARH")
    assert {s.doc_type for s in registry.documents("IN-MH")} == {"regulations", "judgment"}
    assert len(registry.documents()) == len(DEFAULT_KEYS)
    assert registry.documents("BIHAR") == []  # a state of data/jurisdictions.yaml, no documents
    with pytest.raises(ValueError, match="unknown jurisdiction 'GUJRAT STATE'.*GUJARAT"):
        registry.documents("GUJRAT STATE")


def test_get_unknown_key_lists_valid_keys() -> None:
    registry = load_registry(include_seed=False)
    assert registry.get("rera_act_2016").doc_type == "act"
    with pytest.raises(KeyError) as info:
        registry.get("rera_act_2017")
    message = str(info.value)
    assert "unknown document key 'rera_act_2017'" in message
    assert "rera_act_2016" in message and "karnataka_penalty_order_2017" in message
    assert "rera_act_2017" not in registry and "rera_act_2016" in registry


def test_specific_choices_in_the_default_registry() -> None:
    registry = load_registry(include_seed=False)
    act = registry.get("rera_act_2016")
    assert act.effective_date == dt.date(2016, 5, 1)
    assert registry.get("rera_faq_2017").doc_type == "faq"
    draft = registry.get("karnataka_agreement_for_sale_draft_rules_2017")
    assert draft.status is Status.DRAFT
    order = registry.get("karnataka_penalty_order_2017")
    assert (order.doc_type, order.language, order.page_ranges) == ("order", "kan", ((1, 1),))
    assert registry.get("chandigarh_general_rules_2016").page_ranges == ((42, 80),)
    assert registry.get("chandigarh_agreement_for_sale_rules_2016").page_ranges == ((16, 29),)
    for spec in registry.documents():
        assert spec.notes.strip(), f"{spec.key} needs notes explaining its choices"
        assert spec.download_urls and spec.filename, spec.key


def test_seed_page_ranges_record_the_rules_forms_split() -> None:
    registry = load_registry(include_seed=True)
    assert registry.get("tamil_nadu_rules_2017").page_ranges == ((1, 15), (16, 101))
    assert registry.get("karnataka_rules_2017").page_ranges is None
    assert registry.get("uttar_pradesh_general_regulations_2019").doc_type == "regulations"


# ----------------------------------------------------------------------------- DocumentSpec


def test_spec_is_frozen() -> None:
    spec = _spec()
    with pytest.raises(pydantic.ValidationError):
        spec.title = "changed"  # type: ignore[misc]


def test_pages_to_ingest() -> None:
    assert _spec(page_ranges=None).pages_to_ingest(3) == [0, 1, 2]
    assert _spec(page_ranges=None).pages_to_ingest(0) == []
    assert _spec(page_ranges=[[2, 3], [5, 5]]).pages_to_ingest(6) == [1, 2, 4]
    assert _spec(page_ranges=[[5, 5], [2, 3]]).pages_to_ingest(6) == [1, 2, 4]
    # a range running past the end is clipped
    assert _spec(page_ranges=[[2, 10]]).pages_to_ingest(4) == [1, 2, 3]
    # a range starting past the end means the file is not the one described
    with pytest.raises(PageRangeError, match="'sample_rules_2020'.*\\[5, 9\\].*3 page"):
        _spec(page_ranges=[[1, 2], [5, 9]]).pages_to_ingest(3)


def test_sha256_is_normalised_to_lower_case() -> None:
    assert _spec(sha256="AB" * 32).sha256 == "ab" * 32


def test_seed_style_spec_without_pin_or_ranges() -> None:
    spec = _spec(sha256=None, page_ranges=None, download_urls=[], filename="x.pdf")
    assert spec.sha256 is None and not spec.is_pinned


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"jurisdiction": "ATLANTIS"}, "jurisdiction"),
        ({"doc_type": "memo"}, "doc_type"),
        ({"status": "repealed"}, "status"),
        ({"sha256": "1234"}, "sha256 must be 64 hex"),
        ({"sha256": "zz" * 32}, "sha256 must be 64 hex"),
        ({"page_ranges": [[3, 1]]}, "first page is after last page"),
        ({"page_ranges": [[0, 2]]}, "1-based"),
        ({"page_ranges": [[1, 5], [5, 8]]}, "overlap"),
        ({"page_ranges": []}, "non-empty"),
        ({"page_ranges": [[1, 2, 3]]}, "page_ranges"),
        ({"download_urls": [], "filename": None}, "at least one of download_urls or filename"),
        ({"effective_date": "2016-13-01"}, "effective_date must be an ISO date"),
        ({"effective_date": "1 May 2016"}, "effective_date must be an ISO date"),
        ({"effective_date": 20160501}, "effective_date must be an ISO date"),
        ({"download_urls": ["https://x.gov.in/a b.pdf"]}, "percent-encoded"),
        ({"source_url": "ftp://x.gov.in/a.pdf"}, "http(s)"),
        ({"filename": "../escape.pdf"}, "bare file name"),
        ({"language": "english"}, "tesseract code"),
        ({"language": "xyz"}, "unknown language"),
        ({"key": "Bad-Key"}, "lower_snake_case"),
        ({"title": _DROP}, "title"),
        ({"pages": [[1, 2]]}, "pages"),  # typo'd field name: extra fields are forbidden
    ],
)
def test_invalid_documents_name_the_file_and_key(
    tmp_path: Path, overrides: dict[str, Any], expected: str
) -> None:
    path = _write(
        tmp_path / "docs.yaml", [_doc(key="fine_doc", sha256="cd" * 32), _doc(**overrides)]
    )
    with pytest.raises(RegistryError) as info:
        load_registry(include_seed=False, paths=[path])
    message = str(info.value)
    assert str(path) in message
    key = overrides.get("key", "sample_rules_2020")
    assert f"document {key!r}" in message
    assert expected in message


def test_unquoted_invalid_yaml_date_names_the_key(tmp_path: Path) -> None:
    text = (
        "schema_version: 1\ndocuments:\n"
        "  - {key: bad_date, title: T, jurisdiction: CENTRAL, doc_type: act,\n"
        "     effective_date: 2016-13-01, source_url: 'https://x.gov.in/a.pdf', filename: a.pdf}\n"
    )
    path = tmp_path / "dates.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RegistryError, match="document 'bad_date'.*effective_date"):
        parse_registry_file(path)


def test_duplicate_keys_within_a_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "dup.yaml", [_doc(), _doc(sha256="cd" * 32)])
    with pytest.raises(RegistryError) as info:
        load_registry(include_seed=False, paths=[path])
    assert str(path) in str(info.value)
    assert "'sample_rules_2020': duplicate key" in str(info.value)


def test_duplicate_keys_across_files(tmp_path: Path) -> None:
    first = _write(tmp_path / "a.yaml", [_doc()])
    second = _write(tmp_path / "b.yaml", [_doc(sha256="cd" * 32)])
    with pytest.raises(RegistryError) as info:
        load_registry(include_seed=True, paths=[first], seed_paths=[second])
    message = str(info.value)
    assert str(second) in message and str(first) in message
    assert "'sample_rules_2020'" in message


def test_two_documents_pinning_the_same_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path / "pins.yaml", [_doc(), _doc(key="other_doc")])
    with pytest.raises(RegistryError, match="'other_doc'.*already pinned.*'sample_rules_2020'"):
        load_registry(include_seed=False, paths=[path])


def test_duplicate_yaml_mapping_keys_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "dupfield.yaml"
    path.write_text(
        "schema_version: 1\ndocuments:\n  - key: a\n    key: b\n    title: T\n", encoding="utf-8"
    )
    with pytest.raises(RegistryError, match="duplicate key 'key'"):
        load_registry(include_seed=False, paths=[path])


def test_malformed_files(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(RegistryError, match="missing.yaml: cannot read"):
        load_registry(include_seed=False, paths=[missing])
    not_a_mapping = tmp_path / "list.yaml"
    not_a_mapping.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(RegistryError, match="list.yaml: expected a mapping"):
        load_registry(include_seed=False, paths=[not_a_mapping])
    wrong_version = tmp_path / "v2.yaml"
    wrong_version.write_text("schema_version: 2\ndocuments: []\n", encoding="utf-8")
    with pytest.raises(RegistryError, match="v2.yaml: schema_version 2"):
        load_registry(include_seed=False, paths=[wrong_version])
    broken = tmp_path / "broken.yaml"
    broken.write_text("documents: [\n", encoding="utf-8")
    with pytest.raises(RegistryError, match="broken.yaml: invalid YAML"):
        load_registry(include_seed=False, paths=[broken])
    entry = tmp_path / "entry.yaml"
    entry.write_text("documents:\n  - just a string\n", encoding="utf-8")
    with pytest.raises(RegistryError, match="entry.yaml: document #1 must be a mapping"):
        load_registry(include_seed=False, paths=[entry])


def test_registry_model_rejects_duplicate_keys() -> None:
    with pytest.raises(pydantic.ValidationError, match="duplicate document keys"):
        Registry(specs=(_spec(), _spec()))


# ----------------------------------------------------------------------------- corpus pins


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def _manifest_rows() -> dict[str, dict[str, str]]:
    """MANIFEST.tsv rows by file name; fails under CI when the corpus is missing."""
    if not MANIFEST.is_file():
        reason = f"corpus manifest not found at {MANIFEST} (expected ../shared/corpus)"
        if running_in_ci():
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(f"{reason}; set up the shared corpus to run the pin checks")
    with MANIFEST.open(encoding="utf-8", newline="") as fh:
        return {row["file"]: row for row in csv.DictReader(fh, delimiter="\t")}


@pytest.mark.corpus
@pytest.mark.parametrize("key", sorted(DEFAULT_KEYS))
def test_default_document_matches_manifest_and_file(key: str) -> None:
    rows = _manifest_rows()
    spec = load_registry(include_seed=False).get(key)
    assert spec.filename in rows, f"{key}: {spec.filename} is not in {MANIFEST}"
    row = rows[spec.filename]

    assert spec.sha256 == row["sha256"], f"{key}: pin differs from MANIFEST.tsv"
    pinned_url = (
        f"https://raw.githubusercontent.com/{row['source_repo']}/{row['source_commit']}/"
        f"{quote(row['source_path'], safe='/')}"
    )
    assert spec.download_urls[0] == pinned_url

    pdf = CORPUS_DIR / "pdfs" / spec.filename
    if not pdf.is_file():
        if running_in_ci():
            pytest.fail(f"CI is set but {pdf} is missing")
        pytest.skip(f"{pdf} is missing from the shared corpus")
    data = pdf.read_bytes()
    assert hashlib.sha256(data).hexdigest() == spec.sha256, f"{key}: file on disk != pin"
    assert len(data) == int(row["bytes"])

    with pymupdf.open(pdf) as doc:
        assert doc.page_count == int(row["pages"])
        assert spec.page_ranges is not None
        assert max(last for _, last in spec.page_ranges) <= doc.page_count, "range is clipped"
        assert spec.pages_to_ingest(doc.page_count)


_DEVANAGARI = re.compile(r"[\u0900-\u097F\u1CD0-\u1CFF\uA8E0-\uA8FF]")


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("key", "marker"),
    [
        ("chandigarh_general_rules_2016", "G.S.R. 1021(E)"),
        ("chandigarh_agreement_for_sale_rules_2016", "G.S.R. 1026(E)"),
    ],
)
def test_bilingual_gazettes_ingest_exactly_the_english_half(key: str, marker: str) -> None:
    _manifest_rows()
    spec = load_registry(include_seed=False).get(key)
    assert spec.filename is not None
    pdf = CORPUS_DIR / "pdfs" / spec.filename
    with pymupdf.open(pdf) as doc:
        pages = spec.pages_to_ingest(doc.page_count)
        first, rest = pages[0], pages[1:]
        assert pages[-1] == doc.page_count - 1, "English runs to the last page"
        # The English notification starts on the first ingested page (below the Hindi tail) ...
        assert marker in doc[first].get_text()
        assert "MINISTRY OF HOUSING AND URBAN POVERTY ALLEVIATION" in doc[first].get_text()
        # ... not on the page before it, which is Hindi ...
        assert marker not in doc[first - 1].get_text()
        assert len(_DEVANAGARI.findall(doc[first - 1].get_text())) > 300
        # ... and every later ingested page is free of Devanagari.
        for index in rest:
            assert not _DEVANAGARI.search(doc[index].get_text()), f"Hindi on page {index + 1}"


# -- Curated derivations (data/derivations.yaml) ------------------------------------------------


def test_the_packaged_curated_derivations_load() -> None:
    from civicsetu_pipelines.ingest.registry import load_curated_derivations

    entries = load_curated_derivations()
    assert len(entries) >= 30
    assert all(e.note and e.sections for e in entries)
    by_rule = {(e.document, e.rule): e.sections for e in entries}
    assert by_rule[("gujarat_general_rules_2017", "Rule 14")] == ("Section 10(b)",)


CURATED_OK = {
    "document": "gujarat_general_rules_2017",
    "rule": "Rule 14",
    "sections": ["Section 10(b)"],
    "note": "Section 10(b) books of account as may be prescribed.",
}


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ([{**CURATED_OK, "document": "nowhere_rules"}], "unknown document 'nowhere_rules'"),
        ([{**CURATED_OK, "rule": "rule fourteen"}], "rule must look like 'Rule 12'"),
        ([{**CURATED_OK, "sections": ["s. 10"]}], "sections must look like 'Section 9(6)'"),
        ([{**CURATED_OK, "sections": []}], "sections"),
        ([{**CURATED_OK, "note": "short"}], "note"),
        ([{**CURATED_OK, "extra": 1}], "extra"),
        ([CURATED_OK, CURATED_OK], "gujarat_general_rules_2017 Rule 14 is listed twice"),
    ],
)
def test_bad_curated_derivations_name_the_file_and_entry(
    tmp_path: Path, entries: list[dict[str, Any]], message: str
) -> None:
    from civicsetu_pipelines.ingest.registry import RegistryError, load_curated_derivations

    path = tmp_path / "derivations.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "derivations": entries}))
    with pytest.raises(RegistryError) as info:
        load_curated_derivations(path)
    assert str(path) in str(info.value) and "derivation #" in str(info.value)
    assert message in str(info.value)


def test_curated_derivations_need_the_right_top_level(tmp_path: Path) -> None:
    from civicsetu_pipelines.ingest.registry import RegistryError, load_curated_derivations

    path = tmp_path / "derivations.yaml"
    path.write_text("derivations: []\n")
    with pytest.raises(RegistryError, match="schema_version"):
        load_curated_derivations(path)


# ------------------------------------------------------- jurisdictions, kinds, commencement


def test_every_state_and_union_territory_is_data_with_its_iso_code() -> None:
    from civicsetu_pipelines.base import (
        UnknownJurisdictionError,
        jurisdiction_code,
        load_jurisdictions as table,
    )

    items = table().items
    current = [j for j in items if j.merged_on is None]
    assert sum(j.kind == "state" for j in current) == 28
    assert sum(j.kind == "union_territory" for j in current) == 8
    assert len({j.iso for j in items}) == len(items)  # one ISO 3166-2:IN code each
    merged = {j.code: j.merged_into for j in items if j.merged_on is not None}
    dnhdd = "DADRA_AND_NAGAR_HAVELI_AND_DAMAN_AND_DIU"
    assert merged == {"DAMAN_AND_DIU": dnhdd, "DADRA_AND_NAGAR_HAVELI": dnhdd}
    names = {
        "IN-AP": "ANDHRA_PRADESH",
        "andhra pradesh": "ANDHRA_PRADESH",
        "Orissa": "ODISHA",
        "IN-OR": "ODISHA",
        "Daman and Diu": "DAMAN_AND_DIU",
        "centre": "CENTRAL",
        "J&K": "JAMMU_AND_KASHMIR",
    }
    for name, code in names.items():
        assert jurisdiction_code(name) == code, name
    with pytest.raises(UnknownJurisdictionError, match="did you mean KARNATAKA"):
        jurisdiction_code("KARNATKA")


def test_kinds_are_data() -> None:
    from civicsetu_pipelines.ingest.headings import UNIT_WORD
    from civicsetu_pipelines.ingest.kinds import is_case_law, kind_names

    assert set(kind_names()) >= {"act", "rules", "regulations", "faq", "order", "judgment"}
    assert is_case_law("judgment") and not is_case_law("rules") and not is_case_law("unknown")
    assert UNIT_WORD["judgment"] == ("paragraph", "Paragraph")
    assert _spec(doc_type="judgment").doc_type == "judgment"


def test_commencement_dates_units_later_than_their_document(tmp_path: Path) -> None:
    act = load_registry(include_seed=False).get("rera_act_2016")
    assert act.in_force_from("2") == dt.date(2016, 5, 1)
    for number in ("3", "18", "19", "40", "59", "70", "79", "80"):
        assert act.in_force_from(number) == dt.date(2017, 5, 1), number
    assert act.in_force_from("20") == act.in_force_from("81") == dt.date(2016, 5, 1)
    orphan = _doc(commencement=[{"units": "3-5", "from": "2017-05-01", "by": "no_such_notice"}])
    path = _write(tmp_path / "docs.yaml", [orphan])
    with pytest.raises(RegistryError, match="commencement by 'no_such_notice'"):
        load_registry(paths=[path])
    backwards = {"units": "19-3", "from": "2017-05-01", "by": "x"}
    bad = _write(tmp_path / "bad.yaml", [_doc(commencement=[backwards])])
    with pytest.raises(RegistryError, match="units must be numbers and ranges"):
        load_registry(paths=[bad])


def test_the_suite_never_reads_the_users_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user who added documents and removed some (their state dir, named by
    CIVICSETU_STATE_DIR or the checkout's default, holds a user registry), or who points
    CIVICSETU_REGISTRY at a registry of their own: the session's isolation (conftest, before
    any test) leaves the registry the tests read the shipped one."""
    from civicsetu_pipelines.base.settings import ENV_REGISTRY, ENV_STATE_DIR, Settings
    from civicsetu_pipelines.ingest import add_document, remove_document
    from civicsetu_pipelines_tests.amending_documents import RULES_TITLE, rules_pages
    from civicsetu_pipelines_tests.conftest import isolate_from_user_state
    from civicsetu_pipelines_tests.pdfgen import write_pdf

    session_state = Settings.from_env().state_dir
    assert session_state == Path(os.environ["CIVICSETU_TEST_RUN_DIR"]).resolve() / "state"
    assert session_state != (REPO_ROOT / ".civicsetu").resolve()
    assert ENV_REGISTRY not in os.environ

    user_state = tmp_path / "home" / "civicsetu-state"
    pdf = write_pdf(tmp_path / "rules.pdf", rules_pages())
    order = write_pdf(tmp_path / "order.pdf", [["ORDER", "The promoter shall keep accounts."]])
    for path, kind, title in ((pdf, "rules", RULES_TITLE), (order, "order", "An Order, 2019")):
        add_document(path, jurisdiction="Mizoram", kind=kind, title=title,
                     effective_from=dt.date(2019, 1, 1), state_dir=user_state)  # fmt: skip
    remove_document("an_order_2019", state_dir=user_state)
    own = _write(tmp_path / "own.yaml", [_doc(key="users_own_rules_2020")])
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(ENV_STATE_DIR, str(user_state))  # as the user's shell has it
    monkeypatch.setenv(ENV_REGISTRY, str(own))
    leaked = load_registry(include_seed=False)  # what a session without the isolation reads
    assert "mizoram_real_estate_regulation_and_development_rules_2018" in leaked
    assert "users_own_rules_2020" in leaked and "MIZORAM" in leaked.jurisdictions()

    isolate_from_user_state(tmp_path / "run")
    registry = load_registry(include_seed=False)
    assert set(registry.keys()) == DEFAULT_KEYS
    assert registry.jurisdictions() == DEFAULT_JURISDICTIONS
    assert registry.sources == (DOCUMENTS_YAML,)
    assert (user_state / "registry" / "documents.yaml").is_file()  # the user's, untouched


def test_a_document_an_amendment_names_is_removed_with_it_or_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing the rules an order amends would leave the registry naming a document it no
    longer holds (every later command would fail to load it): refused, nothing written; both
    keys in one call remove both, in one write."""
    from civicsetu_pipelines.base.settings import ENV_STATE_DIR
    from civicsetu_pipelines.ingest import AddError, add_document, remove_documents
    from civicsetu_pipelines_tests.amending_documents import GO, dated_rules_pages
    from civicsetu_pipelines_tests.pdfgen import write_pdf

    state = tmp_path / "state"
    monkeypatch.setenv(ENV_STATE_DIR, str(state))
    rules = add_document(write_pdf(tmp_path / "rules.pdf", dated_rules_pages()),
                         jurisdiction="Mizoram").spec  # fmt: skip
    order = add_document(write_pdf(tmp_path / "go.pdf", [GO]), jurisdiction="Mizoram").spec
    assert order.amends == (rules.key,)  # read from its own words
    registry = state / "registry" / "documents.yaml"
    before = registry.read_bytes()
    with pytest.raises(AddError, match=rf"'{order.key}' amends '{rules.key}' and stays registered"):
        remove_documents([rules.key])
    with pytest.raises(AddError, match="no document 'nothing_2020'"):
        remove_documents([order.key, "nothing_2020"])  # one unknown key: none removed
    assert registry.read_bytes() == before
    removed = remove_documents([rules.key, order.key])
    assert [s.key for s in removed] == [rules.key, order.key]
    assert "MIZORAM" not in load_registry(include_seed=False).jurisdictions()


def _large_registry(count: int) -> list[dict[str, Any]]:
    day = dt.date(2021, 1, 1)
    return [
        {"key": f"gujarat_order_{i:05d}", "jurisdiction": "GUJARAT", "doc_type": "judgment",
         "title": f"Order {i}: A v. B (Complaint No. {i})",
         "effective_date": (day + dt.timedelta(days=i % 900)).isoformat(),
         "filename": f"{i:064x}.pdf", "sha256": f"{i:064x}"}
        for i in range(count)
    ]  # fmt: skip


def test_a_large_registry_is_remembered_beside_it_and_read_again_only_when_its_text_changes(
    tmp_path: Path,
) -> None:
    """A state's user registry of thousands of documents is read by every command and run: its
    entries are kept beside it as JSON, keyed by its text, and a file whose
    text changed is parsed again."""
    from civicsetu_pipelines.ingest.registry import (
        REMEMBER_MIN_BYTES,
        parse_registry_file,
        read_entries,
        write_registry_file,
    )

    path = tmp_path / "documents.yaml"
    entries = _large_registry(2000)
    write_registry_file(path, "# generated\n", entries)
    assert path.stat().st_size > REMEMBER_MIN_BYTES
    kept = path.with_name(".documents.yaml.entries.json")
    assert kept.is_file()  # written with the file: the next read parses no YAML
    assert read_entries(path) == entries
    # what is remembered is what the YAML reads as (dates as text, for the spec to validate)
    kept.unlink()
    assert read_entries(path) == entries and kept.is_file()
    # the file edited by hand: its new text is parsed, and remembered again
    text = path.read_text().replace("Order 7: A v. B", "Order 7: C v. D")
    path.write_text(text)
    assert read_entries(path)[7]["title"] == "Order 7: C v. D (Complaint No. 7)"
    assert hashlib.sha256(text.encode()).hexdigest() in kept.read_text()
    # a duplicate key is refused as before, whatever was remembered
    path.write_text(text + "  key: again\n")
    with pytest.raises(RegistryError, match="invalid YAML|duplicate"):
        parse_registry_file(path)
    # a small file (the shipped registries) leaves nothing beside it
    small = tmp_path / "small.yaml"
    write_registry_file(small, "", entries[:3])
    assert read_entries(small) == entries[:3]
    assert not small.with_name(".small.yaml.entries.json").exists()


def test_a_date_known_to_the_month_only_is_taken_only_when_the_user_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules whose date line leaves the day to a hand ("DEHRADUN, DATED APRIL, 2017"): refused,
    naming --first-of-month; with it, the month's first day, and the note says so."""
    from civicsetu_pipelines.base.settings import ENV_STATE_DIR
    from civicsetu_pipelines.ingest import AddError, add_document
    from civicsetu_pipelines_tests.pdfgen import write_pdf

    monkeypatch.setenv(ENV_STATE_DIR, str(tmp_path / "state"))
    page = ["ORDER", "DEHRADUN, DATED APRIL, 2017", "The promoter shall keep separate accounts."]
    pdf = write_pdf(tmp_path / "order.pdf", [page])
    given = {"jurisdiction": "Mizoram", "kind": "order", "title": "An Order, 2017"}
    with pytest.raises(AddError, match=r"--effective-from YYYY-MM-DD \(or --first-of-month: the "
                                       r"day is not printed.*April 2017 only\)"):  # fmt: skip
        add_document(pdf, **given)
    added = add_document(pdf, first_of_month=True, **given)
    assert added.spec.effective_date == dt.date(2017, 4, 1)
    assert any("first day of its month (--first-of-month)" in n for n in added.notes)
