"""The LLM-judged ragas metrics (faithfulness, response relevancy), averaged over runs, against a
local OpenAI-compatible server that plays the judge (issue 6)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from civicsetu_pipelines.answer.llm import LLMSettings
from civicsetu_pipelines.evaluate.metrics import Judged, ragas_llm

QUESTION = "What must the promoter return if possession is not given?"
ANSWER = "The promoter must return the amount received with interest."


class Judge:
    """Answers ragas' three prompts; ``verdicts`` scripts the NLI verdict of successive calls."""

    def __init__(self) -> None:
        self.verdicts: list[int] = []
        self.noncommittal = 0
        self.fail = False
        self.prompts: list[str] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                text = body["messages"][-1]["content"]
                judge.prompts.append(text)
                if judge.fail:
                    self.send_response(500)
                    self.end_headers()
                    return
                payload = json.dumps(judge.reply(body, text)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reply(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        if "faithfulness of a series of statements" in text:
            verdict = self.verdicts.pop(0) if self.verdicts else 1
            content: dict[str, Any] = {"statements": [
                {"statement": "The promoter returns the amount with interest.",
                 "reason": "The context says so.", "verdict": verdict}]}  # fmt: skip
        elif "Generate a question for the given answer" in text:
            content = {"question": QUESTION, "noncommittal": self.noncommittal}
        else:
            content = {"statements": ["The promoter returns the amount with interest."]}
        choices = [{"index": i, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": json.dumps(content)}}
                   for i in range(body.get("n") or 1)]  # fmt: skip
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        return {"id": "judge", "object": "chat.completion", "created": 0,
                "model": body["model"], "choices": choices, "usage": usage}  # fmt: skip


@pytest.fixture
def judge() -> Iterator[Judge]:
    server = Judge()
    yield server
    server.server.shutdown()
    server.server.server_close()


def item(qid: str = "q1", *, refused: bool = False, expect_refusal: bool = False) -> Judged:
    return Judged(
        id=qid, expected=("CENTRAL:Section 18",), retrieved=("CENTRAL:Section 18",),
        expect_refusal=expect_refusal, refused=refused, citations_total=1, citations_verbatim=1,
        answer="" if refused else ANSWER, ground_truth="The amount with interest.",
        contexts=("the promoter shall return the amount received by him with interest",),
        reference_contexts=("x",), latency_ms=1.0, question=QUESTION,
    )  # fmt: skip


def embedder() -> Callable[[str], np.ndarray]:
    rng = np.random.default_rng(7)
    table: dict[str, np.ndarray] = {}

    def embed(text: str) -> np.ndarray:
        return table.setdefault(text, rng.normal(size=16))

    return embed


def test_no_endpoint_no_judge() -> None:
    assert ragas_llm([item()], None) is None


def test_a_faithful_relevant_answer_scores_one(judge: Judge) -> None:
    settings = LLMSettings(base_url=judge.url, model="judge")
    scores = ragas_llm([item()], settings, runs=2, embed_query=embedder())
    assert scores is not None
    assert scores["q1"]["faithfulness"] == pytest.approx(1.0)
    # The judge's generated question is the question itself: cosine 1.
    assert scores["q1"]["response_relevancy"] == pytest.approx(1.0)
    assert any("faithfulness of a series of statements" in p for p in judge.prompts)


def test_scores_are_averaged_over_runs(judge: Judge) -> None:
    judge.verdicts = [1, 0, 0]  # three runs: faithful, unfaithful, unfaithful
    settings = LLMSettings(base_url=judge.url, model="judge")
    scores = ragas_llm([item()], settings, runs=3)
    assert scores is not None
    assert scores["q1"]["faithfulness"] == pytest.approx(1 / 3)
    assert "response_relevancy" not in scores["q1"]  # no embedder given


def test_a_noncommittal_answer_has_zero_relevancy(judge: Judge) -> None:
    judge.noncommittal = 1
    settings = LLMSettings(base_url=judge.url, model="judge")
    scores = ragas_llm([item()], settings, runs=1, embed_query=embedder())
    assert scores is not None and scores["q1"]["response_relevancy"] == pytest.approx(0.0)


def test_refusals_are_not_judged_and_a_failing_judge_scores_nothing(judge: Judge) -> None:
    settings = LLMSettings(base_url=judge.url, model="judge", timeout_s=5)
    assert ragas_llm([item(refused=True), item("q2", expect_refusal=True)], settings) == {}
    assert judge.prompts == []
    judge.fail = True
    assert ragas_llm([item()], settings, runs=2) == {}
