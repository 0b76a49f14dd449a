"""Is a jurisdiction's materialization up to date? A fingerprint of everything it depends on.

The fingerprint covers the registry entries of the jurisdiction, the sha256 of each document's
file in the offline mirror, the package's code, SQL and registry data, and the settings that
change outputs (embedding model and prefixes, OCR). ``civicsetu materialize`` tags each run with
it and skips a jurisdiction whose last successful run had the same fingerprint (``--force``
runs it anyway). When a document is not in a mirror (it would be downloaded), there is no
fingerprint and the run always happens: the conditional GET decides there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from civicsetu_pipelines.base import code_hash
from civicsetu_pipelines.ingest import Registry
from civicsetu_pipelines.store import sha256_file

FINGERPRINT_TAG = "civicsetu/fingerprint"


def partition_fingerprint(
    jurisdiction: str,
    registry: Registry,
    mirror_dirs: Sequence[Path],
    settings: Mapping[str, str],
    pdf_store: Path | None = None,
) -> str | None:
    """The fingerprint of one jurisdiction's inputs, or None when it cannot be known offline.

    A document found in a mirror directory counts by its file's sha256; one that is not (added
    with ``documents add``, or from a watched source) counts by its pinned sha256 when the
    content-addressed ``pdf_store`` holds that file (``raw_pdfs`` verifies it on use)."""
    documents = []
    for spec in registry.documents(jurisdiction):
        found = next(
            (
                d / spec.filename
                for d in mirror_dirs
                if spec.filename and (d / spec.filename).is_file()
            ),
            None,
        )
        if found is not None:
            digest = sha256_file(found)
        elif spec.sha256 and pdf_store is not None and (pdf_store / f"{spec.sha256}.pdf").is_file():
            digest = spec.sha256
        else:
            return None
        documents.append({"spec": spec.model_dump(mode="json"), "sha256": digest})
    payload = {
        "jurisdiction": jurisdiction,
        "documents": documents,
        "code": code_hash(),
        "settings": dict(sorted(settings.items())),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
