"""``chunk_embeddings`` encodes a state's new texts a slice at a time (issue 46: the model's worker
held all 10,001 documents' windows at once): the vectors are those of one call, each slice is
cached as it is encoded, and the log says which slice is being encoded."""

from __future__ import annotations

import dagster as dg
import numpy as np
import pytest

from civicsetu_pipelines.defs.assets import store as store_assets
from civicsetu_pipelines.defs.resources import embedding_resource_from_env
from civicsetu_pipelines.store import text_sha256
from civicsetu_pipelines.store.database import connect
from civicsetu_pipelines_tests.conftest import StoreEnv

TEXTS = [f"Rule {n}. The promoter shall deposit {n}0 per cent of the amounts realised in a "
         f"separate account within {n} days." for n in range(1, 6)]  # fmt: skip


def test_texts_are_encoded_a_slice_at_a_time_with_the_vectors_of_one_call(
    store_env: StoreEnv, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    resource = embedding_resource_from_env()
    whole, whole_windows = resource.embedder().embed_documents(TEXTS)
    monkeypatch.setattr(store_assets, "EMBED_SLICE", 2)
    context = dg.build_asset_context()
    with connect(store_env.database_url) as conn:
        cached, encoded = store_assets.embed_with_cache(context, conn, resource, [*TEXTS, TEXTS[0]])
        stored = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()
        again, encoded_again = store_assets.embed_with_cache(context, conn, resource, TEXTS)
    assert encoded == 5 and stored == (5,)  # each text once (the repeated one too)
    for text, vector, windows in zip(TEXTS, whole, whole_windows, strict=True):
        mine, n = cached[text_sha256(text)]
        assert n == windows
        np.testing.assert_allclose(mine, vector, atol=1e-5)
    said = capfd.readouterr().err  # the run's log
    assert all(f"of texts {part}/5" in said for part in ("1-2", "3-4", "5-5")), said
    assert encoded_again == 0 and set(again) == set(cached)  # all from the cache now
