"""The query embedder of the answer path: a question and its reformulation in the statute's words
are encoded in one forward pass, with the same vectors as one at a time (the real packaged
all-MiniLM-L6-v2)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from civicsetu_pipelines.answer.questions import understand
from civicsetu_pipelines.answer.retrieval import QueryEmbedder
from civicsetu_pipelines.store.embedders import open_embedder
from civicsetu_pipelines.store.embedding import EmbeddingConfig


@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_many_is_one_batch_with_the_same_vectors(packaged_models_dir: Path, runtime: str) -> None:
    config = EmbeddingConfig(runtime=runtime)
    embed = QueryEmbedder(open_embedder(config, packaged_models_dir, threads=1))
    query = understand("My builder is late. Can I get my money back?", known_jurisdictions=[])
    assert query.rewrite is not None
    one_by_one = [embed(query.text), embed(query.rewrite)]
    batch = embed.many([query.text, query.rewrite])
    assert len(batch) == 2
    for single, batched in zip(one_by_one, batch, strict=True):
        assert single.shape == (384,) and float(np.dot(single, batched)) > 0.9999
    # the reformulation reads closer to the statute's own words than the question as asked
    section_18 = embed("If the promoter fails to complete or is unable to give possession of an "
                       "apartment, he shall return the amount received with interest.")  # fmt: skip
    assert float(np.dot(batch[1], section_18)) > float(np.dot(batch[0], section_18))
