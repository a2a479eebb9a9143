"""PPL (candidate likelihood) evaluation against the fake server, whose token
log-probabilities are set by the test so the right choice is known."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import anyio
import pytest

import harness
from harness.errors import ConfigError, DatasetError
from harness.ppl.probe import PROBE_TEXT, UnsupportedLikelihoodError
from harness.ppl.runner import shared_token_start
from harness.testing import FakeOpenAI, Fault, logprobs
from harness.testing.logprobs import Scorer

from .helpers import count_stored
from .test_cli import cli, env

LETTERS = "ABC"


def write_mc(path: Path, n: int) -> dict[str, str]:
    """``n`` three-option questions; the gold letter of ``q{i}`` is ``ABC[i % 3]``."""
    rows = [{"question": f"q{i}", "A": "x", "B": "y", "C": "z", "answer": LETTERS[i % 3]}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {r["question"]: r["answer"] for r in rows}


def knows_gold(golds: dict[str, str]) -> Scorer:
    """A scorer for which the gold letter is the likely next token after "Answer:"."""

    def logprob(context: str, token: str) -> float:
        found = re.search(r"Question: (q\d+)", context)
        if found and context.endswith("Answer:") and token.strip() in LETTERS:
            return -0.1 if token.strip() == golds[found.group(1)] else -4.0
        return -1.0

    return Scorer(logprob)


def mc_config(path: Path, base_url: str, *, inferencer: str = "dict(type=PPLInferencer)",
              template: str | None = None, api: str = "completions",
              reference: str = "answer") -> Path:
    template = template or ("{l: 'Question: {question}\\nA. {A}\\nB. {B}\\nC. {C}\\n"
                            "Answer: ' + l for l in 'ABC'}")
    model = dict(abbr="fake", type="OpenAISDK", path="fake-model",
                 openai_api_base=base_url, key="sk-test", api=api)
    path.write_text(f"""
from harness import PromptTemplate, ZeroRetriever, PPLInferencer, AccEvaluator, CustomDataset
datasets = [dict(abbr="mc", type=CustomDataset, path="mc.jsonl",
    reader_cfg=dict(input_columns=["question", "A", "B", "C"], output_column={reference!r}),
    infer_cfg=dict(prompt_template=dict(type=PromptTemplate, template={template}),
                   retriever=dict(type=ZeroRetriever), inferencer={inferencer}),
    eval_cfg=dict(evaluator=dict(type=AccEvaluator)))]
models = [{model!r}]
""")
    return path


def details(work: Path) -> list[dict]:
    lines = (work / "details" / "fake" / "mc.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize("method", ["echo", "next_token"])
async def test_the_most_likely_candidate_is_chosen(tmp_path, method):
    golds = write_mc(tmp_path / "mc.jsonl", 9)
    async with FakeOpenAI(scorer=knows_gold(golds)) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer=f"dict(type=PPLInferencer, method={method!r})")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("mc")["correct"] == 9
    rows = details(tmp_path / "w")
    assert [r["prediction"] for r in rows] == [golds[f"q{i}"] for i in range(9)]
    first = rows[0]["ppl"]
    assert first["method"] == method and first["chosen"] == "A"
    assert first["candidates"]["A"]["logprob"] == pytest.approx(-0.1)
    assert first["candidates"]["B"]["logprob"] == pytest.approx(-4.0)
    # echo: one probe and one request per candidate; next token: one probe, one per sample.
    assert srv.stats.total == 1 + (9 * 3 if method == "echo" else 9)


@pytest.mark.parametrize("method", ["echo", "next_token"])
async def test_replicas_share_their_likelihood_requests(tmp_path, method):
    # A likelihood is the same for every replica: asked once per run, not n times.
    golds = write_mc(tmp_path / "mc.jsonl", 9)
    async with FakeOpenAI(scorer=knows_gold(golds)) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer=f"dict(type=PPLInferencer, method={method!r})")
        cfg.write_text(cfg.read_text().replace('abbr="mc",', 'abbr="mc", n=3,'))
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=8)
        assert srv.stats.total == 1 + (9 * 3 if method == "echo" else 9)
        result = report.result("mc")
        assert result["total"] == 27 and result["correct"] == 27
        assert result["replica_accuracy"] == [100.0, 100.0, 100.0]


async def test_a_probe_that_fails_concludes_nothing_and_is_asked_again(tmp_path):
    # The echo probe's first call fails (a 503, the server busy): that says nothing of
    # what the server offers. Concluding "no echo" switched the whole run to next-token likelihoods, and
    # the stored next-token rows kept it there on every rerun.
    golds = write_mc(tmp_path / "mc.jsonl", 6)
    probes = []

    def faults(body, attempt):
        if body.get("echo") and body.get("prompt") == PROBE_TEXT:
            probes.append(attempt)
            return Fault("server_error", status=503) if len(probes) == 1 else None
        return None

    async with FakeOpenAI(scorer=knows_gold(golds), faults=faults) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        cfg.write_text(cfg.read_text().replace("'api': 'completions'",
                                               "'api': 'completions', 'max_attempts': 1"))
        first = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=1)
        assert first.result("mc")["counts"] == {"ok": 5, "model_error": 1}
        assert {r["ppl"]["method"] for r in details(tmp_path / "w") if "ppl" in r} == {"echo"}
        again = await harness.evaluate(cfg, work_dir=tmp_path / "w", concurrency=1)
    assert again.complete and again.result("mc")["correct"] == 6
    assert {r["ppl"]["method"] for r in details(tmp_path / "w")} == {"echo"}


async def test_a_stopped_sample_keeps_the_likelihoods_it_already_got(tmp_path):
    # Candidates A and B answer at once, C only after 30 s; the run is stopped once two
    # likelihood rows are stored. They were paid for: the rerun asks only for C.
    golds = write_mc(tmp_path / "mc.jsonl", 1)

    def latency(body):
        prompt = body.get("prompt")
        return 30.0 if isinstance(prompt, str) and prompt.endswith("Answer: C") else 0.0

    async with FakeOpenAI(scorer=knows_gold(golds), latency=latency) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer="dict(type=PPLInferencer, method='echo')")
        with anyio.fail_after(20):  # the rows of A and B never stored: the defect
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: harness.evaluate(cfg, work_dir=tmp_path / "w"))
                while count_stored(tmp_path / "w" / "harness.db") < 2:  # noqa: ASYNC110 - the store's file: no event to wait on
                    await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
        srv.latency = 0.0
        before = srv.stats.total
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        assert srv.stats.total - before == 2  # the probe, and C
    assert report.result("mc")["correct"] == 1


def lengths_scorer() -> Scorer:
    """Continuations ' cat' (1 token, -3), ' dog dog' (2 × -2), ' elephant' (1, -3.5):
    sum picks cat (A), per token dog (B), per byte elephant (C)."""
    values = {" cat": -3.0, " dog": -2.0, " elephant": -3.5}
    return Scorer(lambda context, token: values.get(token, -1.0))


LENGTHS = "{'A': 'Q: {question}\\nAnswer: cat', 'B': 'Q: {question}\\nAnswer: dog dog', " \
          "'C': 'Q: {question}\\nAnswer: elephant'}"


@pytest.mark.parametrize("normalization,chosen,score", [
    ("sum", "A", -3.0), ("token", "B", -2.0), ("byte", "C", -3.5 / 9)])
async def test_each_normalization_ranks_by_its_own_score(tmp_path, normalization, chosen,
                                                         score):
    write_mc(tmp_path / "mc.jsonl", 3)
    async with FakeOpenAI(scorer=lengths_scorer()) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, template=LENGTHS,
                        inferencer=f"dict(type=PPLInferencer, normalization={normalization!r})")
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = details(tmp_path / "w")
    assert {r["prediction"] for r in rows} == {chosen}
    candidates = rows[0]["ppl"]["candidates"]
    assert candidates[chosen]["score"] == pytest.approx(score)
    assert candidates["B"]["continuation"] == " dog dog" and candidates["B"]["tokens"] == 2


def subword_tokens(text: str) -> list[tuple[str, int]]:
    """The fake's word tokens, but ``' Parma'`` in two pieces, as a BPE tokenizer may
    split a rarer word: ``' Par'`` + ``'ma'``."""
    tokens: list[tuple[str, int]] = []
    for token, offset in logprobs.tokenize(text):
        tokens += [(" Par", offset), ("ma", offset + 4)] if token == " Parma" else \
            [(token, offset)]
    return tokens


@pytest.mark.parametrize("normalization", ["sum", "token", "byte"])
async def test_echo_scores_every_candidate_from_where_all_their_tokens_start(tmp_path,
                                                                             normalization):
    """The candidates' common text ("…Answer: Par") ends inside ' Paris' but between
    ' Par' and 'ma': each is scored over its whole answer, not B over 'ma' alone."""
    write_mc(tmp_path / "mc.jsonl", 2)  # golds A and B
    values = {" Paris": -1.0, " Par": -3.0, "ma": -0.5}
    scorer = Scorer(lambda context, token: values.get(token, -2.0), tokenize=subword_tokens)
    template = "{'A': 'Q: {question}\\nAnswer: Paris', 'B': 'Q: {question}\\nAnswer: Parma'}"
    async with FakeOpenAI(scorer=scorer) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, template=template,
                        inferencer="dict(type=PPLInferencer, method='echo', "
                                   f"normalization={normalization!r})")
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = details(tmp_path / "w")
    assert [r["prediction"] for r in rows] == ["A", "A"]
    candidates = rows[0]["ppl"]["candidates"]
    assert candidates["A"] == {"continuation": " Paris", "logprob": -1.0, "tokens": 1,
                               "score": pytest.approx(candidates["A"]["score"])}
    assert candidates["B"]["continuation"] == " Parma"
    assert candidates["B"]["logprob"] == pytest.approx(-3.5)
    assert candidates["B"]["tokens"] == 2


def test_the_shared_token_start_is_the_last_offset_every_candidate_has():
    assert shared_token_start(10, [[0, 3, 6], [0, 3, 6, 10]]) == 6
    assert shared_token_start(10, [[0, 3, 10], [0, 3, 10, 12]]) == 10
    assert shared_token_start(10, [[0, 4, 11], [0, 5, 9]]) == 0
    # Offsets past the split never count, even when every candidate has them.
    assert shared_token_start(5, [[0, 2, 8], [0, 2, 8]]) == 2


async def test_another_normalization_reranks_the_stored_likelihoods_without_requests(tmp_path):
    write_mc(tmp_path / "mc.jsonl", 3)
    async with FakeOpenAI(scorer=lengths_scorer()) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, template=LENGTHS)
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
        srv.reset()
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, template=LENGTHS,
                        inferencer="dict(type=PPLInferencer, normalization='byte')")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 0
    assert {r["prediction"] for r in details(tmp_path / "w")} == {"C"}
    assert report.result("mc")["correct"] == 1  # only q2's gold is C


async def test_a_candidate_missing_from_the_top_list_is_decided_or_pending(tmp_path):
    golds = write_mc(tmp_path / "mc.jsonl", 3)
    # The fake lists only ' A' and ' B' as next tokens. q0 (gold A) and q1 (B): the gold
    # scores -0.1 and C, unlisted, is below the lowest listed (-4): decided. q2 (gold C):
    # A and B both score -4 and C could score up to -4 too: pending, not scored wrong.
    scorer = knows_gold(golds)
    scorer.vocabulary = (" A", " B")
    async with FakeOpenAI(scorer=scorer) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer="dict(type=PPLInferencer, method='next_token', top_logprobs=2)")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    rows = {r["index"]: r for r in details(tmp_path / "w")}
    assert [rows[0]["prediction"], rows[1]["prediction"]] == ["A", "B"]
    assert rows[0]["ppl"]["candidates"]["C"]["not_listed_below"] == pytest.approx(-4.0)
    assert rows[2]["status"] == "model_error" and rows[2]["correct"] is None
    assert "'C' is not among the listed next tokens" in rows[2]["error"]
    result = report.result("mc")
    assert result["correct"] == 2 and result["scored"] == 2 and result["pending"] == 1


async def test_no_listed_candidate_leaves_the_sample_pending_with_its_cause(tmp_path):
    write_mc(tmp_path / "mc.jsonl", 2)
    scorer = Scorer(vocabulary=(" The", "\n"))  # never an option letter
    async with FakeOpenAI(scorer=scorer) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer="dict(type=PPLInferencer, method='next_token')")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    result = report.result("mc")
    assert result["scored"] == 0 and result["pending"] == 2
    assert result["counts"] == {"model_error": 2}
    row = details(tmp_path / "w")[0]
    assert row["correct"] is None and "no candidate" in row["error"]
    assert row["ppl"]["candidates"]["A"]["logprob"] is None


async def test_an_undecidable_sample_gets_advice_a_rerun_cannot_undo(tmp_path):
    # A rerun reads the same stored top list: "run the same command again" would leave
    # the sample pending for ever, so the CLI names the settings that can decide it.
    write_mc(tmp_path / "mc.jsonl", 2)
    scorer = Scorer(vocabulary=(" The", "\n"))
    async with FakeOpenAI(scorer=scorer) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url,
                        inferencer="dict(type=PPLInferencer, method='next_token')")
        runs, requests = [], []
        for _ in range(2):
            runs.append(await anyio.run_process(
                cli("run", str(cfg), "-w", str(tmp_path / "w")), env=env(), check=False))
            requests.append(srv.stats.total)
    second = runs[1].stderr.decode()
    assert runs[1].returncode == 1 and requests[1] == requests[0]  # the rerun asked nothing
    assert "model_error: 2 × PPL: no candidate decidable from the top_logprobs" in second
    assert "raise the PPLInferencer's top_logprobs" in second and "method='echo'" in second
    assert "run the same command again" not in second


async def test_a_backend_without_logprobs_stops_before_any_candidate_is_sent(tmp_path):
    write_mc(tmp_path / "mc.jsonl", 5)
    async with FakeOpenAI(scorer=False) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        with pytest.raises(UnsupportedLikelihoodError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    message = str(caught.value)
    assert "echo=True" in message and "top log-probabilities" in message
    assert "fake-model" in message and "sk-test" not in message
    # Only the two probes: no candidate was sent.
    assert [r["prompt"] for r in srv.requests] == ["The capital of France is Paris",
                                                    "The capital of France is"]


async def test_echo_on_a_chat_model_is_refused_with_the_fix(tmp_path):
    write_mc(tmp_path / "mc.jsonl", 2)
    async with FakeOpenAI() as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url, api="chat",
                        inferencer="dict(type=PPLInferencer, method='echo')")
        with pytest.raises(UnsupportedLikelihoodError, match="api='completions'"):
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 0


@pytest.mark.parametrize("inferencer,template,field", [
    ("dict(type=PPLInferencer)", "'Question: {question}'", "prompt_template.template"),
    ("dict(type=PPLInferencer)", "{'A': 'Question: {question} A'}", "prompt_template"),
    ("dict(type=GenInferencer)", None, "infer_cfg.inferencer"),
    ("dict(type=PPLInferencer, normalization='mean')", None, "inferencer.normalization"),
    ("dict(type=PPLInferencer, labels=['A', 'Z'])", None, "inferencer.labels"),
    ("dict(type=PPLInferencer, normalizing_str='Answer:')", None, "normalizing_str"),
])
async def test_bad_ppl_configs_name_the_file_and_field(tmp_path, inferencer, template, field):
    write_mc(tmp_path / "mc.jsonl", 2)
    cfg = mc_config(tmp_path / "cfg.py", "http://127.0.0.1:9/v1", inferencer=inferencer,
                    template=template)
    cfg.write_text(cfg.read_text().replace("PPLInferencer, AccEvaluator",
                                           "PPLInferencer, GenInferencer, AccEvaluator"))
    with pytest.raises(ConfigError) as caught:
        harness.load_config(cfg)
    assert str(cfg) in str(caught.value) and field in str(caught.value)


async def test_a_gold_label_that_is_no_candidate_is_reported_before_any_request(tmp_path):
    path = tmp_path / "mc.jsonl"
    write_mc(path, 3)
    path.write_text(path.read_text() + json.dumps(
        {"question": "q3", "A": "x", "B": "y", "C": "z", "answer": "D"}) + "\n")
    async with FakeOpenAI() as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        with pytest.raises(DatasetError) as caught:
            await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert srv.stats.total == 0
    text = str(caught.value)
    assert "mc.jsonl:4" in text and "answer" in text and "'D'" in text


OPENCOMPASS_BOOLQ = '''
from harness import PromptTemplate, ZeroRetriever, PPLInferencer, AccEvaluator, CustomDataset

BoolQ_reader_cfg = dict(input_columns=['question', 'passage'], output_column='answer',
                        test_split='test')

BoolQ_infer_cfg = dict(
    prompt_template=dict(
        type=PromptTemplate,
        template={
            0: dict(round=[
                dict(role='HUMAN', prompt='{passage}\\nQuestion: {question}?'),
                dict(role='BOT', prompt='No'),
            ]),
            1: dict(round=[
                dict(role='HUMAN', prompt='{passage}\\nQuestion: {question}?'),
                dict(role='BOT', prompt='Yes'),
            ]),
        },
    ),
    retriever=dict(type=ZeroRetriever),
    inferencer=dict(type=PPLInferencer),
)

BoolQ_eval_cfg = dict(evaluator=dict(type=AccEvaluator))

BoolQ_datasets = [
    dict(type=CustomDataset, abbr='BoolQ', path='boolq.jsonl',
         reader_cfg=BoolQ_reader_cfg, infer_cfg=BoolQ_infer_cfg, eval_cfg=BoolQ_eval_cfg)
]
'''


@pytest.mark.parametrize("api", ["completions", "chat"])
async def test_an_opencompass_ppl_config_ported_by_imports_runs(tmp_path, api):
    rows = [{"passage": f"p{i}", "question": f"is {i} even", "answer": int(i % 2 == 0)}
            for i in range(6)]
    (tmp_path / "boolq.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def logprob(context: str, token: str) -> float:  # the completions route
        found = re.findall(r"is (\d+) even", context)
        if not found:  # the probe
            return -1.0
        even = int(found[-1]) % 2 == 0
        return -0.2 if token.strip() == ("Yes" if even else "No") else -3.0

    def chat(body: dict):  # the chat route: the next token's top list
        from harness.testing.replies import Reply

        if "messages" not in body:
            return "x"  # the completions route: the scorer gives its logprobs
        found = re.findall(r"is (\d+) even", body["messages"][-1]["content"])
        if not found:  # the probe
            return Reply("Paris", logprobs=[("Paris", -0.5, [("Paris", -0.5)])])
        even = int(found[0]) % 2 == 0
        top = [("Yes", -0.2), ("No", -3.0)] if even else [("No", -0.2), ("Yes", -3.0)]
        return Reply(top[0][0], logprobs=[(top[0][0], top[0][1], top)])

    async with FakeOpenAI(responder=chat, scorer=Scorer(logprob, (" Yes", " No", "\n"))) as srv:
        model = dict(abbr="fake", type="OpenAISDK", path="fake-model",
                     openai_api_base=srv.base_url, key="sk-test", api=api)
        cfg = tmp_path / "boolq_ppl.py"
        cfg.write_text(OPENCOMPASS_BOOLQ + f"models = [{model!r}]\n")
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w")
    assert report.result("BoolQ")["correct"] == 6
    # The probe, then echo (completions): one request per candidate; the chat endpoint
    # gives the next token's list: one request per sample.
    assert srv.stats.by_route == {api: 1 + 6 * (2 if api == "completions" else 1)}


@pytest.mark.timeout(120)
async def test_a_killed_ppl_run_resumes_and_then_reruns_with_zero_requests(tmp_path):
    n = 60
    golds = write_mc(tmp_path / "mc.jsonl", n)
    async with FakeOpenAI(scorer=knows_gold(golds), latency=0.01) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        work = tmp_path / "w"
        args = cli("run", str(cfg), "-w", str(work), "-q", "-c", "4")
        proc = await anyio.open_process(args, env=env())
        async with proc:
            with anyio.fail_after(60):  # until a third is stored
                while count_stored(work / "harness.db", "predictions") < n:  # noqa: ASYNC110 - another process's SQLite file: no event to wait on
                    await anyio.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        with anyio.fail_after(10):
            await srv.wait_idle()
        sent_before = [r["prompt"] for r in srv.requests if r.get("echo")]
        stored_before = count_stored(work / "harness.db", "predictions")
        srv.requests.clear()
        resumed = await anyio.run_process(args, env=env(), check=False)
        assert resumed.returncode == 0, resumed.stderr.decode()
        sent_after = [r["prompt"] for r in srv.requests if r.get("echo")]
        srv.reset()
        again = await anyio.run_process(args, env=env(), check=False)
        assert again.returncode == 0 and srv.stats.total == 0
    result = json.loads((work / "results" / "fake" / "mc.json").read_text())
    assert result["correct"] == n and result["complete"]
    # Every candidate stored before the kill was not asked again (echo prompts only:
    # the probe is repeated by each run).
    assert len(sent_after) == 3 * n - stored_before + 1  # +1: the echo probe
    probe = {"The capital of France is Paris"}
    assert not (set(sent_after) - probe) & set(sent_before[:stored_before - 4])


async def test_mode_eval_rescores_stored_likelihoods_and_reports_the_rest_missing(tmp_path):
    golds = write_mc(tmp_path / "mc.jsonl", 6)
    async with FakeOpenAI(scorer=knows_gold(golds)) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        await harness.evaluate(cfg, work_dir=tmp_path / "w", limit=4)
        srv.reset()
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert srv.stats.total == 0
    result = report.result("mc")
    # The four predicted samples are re-scored from their stored likelihoods (all right);
    # the two never predicted are missing, not wrong.
    assert result["correct"] == 4 and result["counts"] == {"missing": 2, "ok": 4}
    assert result["complete"] is False


async def test_mode_eval_finds_a_renamed_ppl_datasets_likelihoods(tmp_path):
    # Its likelihoods are stored per request, not under the sample's key: a dataset
    # renamed (or sharing another's requests) was refused as having nothing stored.
    golds = write_mc(tmp_path / "mc.jsonl", 6)
    async with FakeOpenAI(scorer=knows_gold(golds)) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        await harness.evaluate(cfg, work_dir=tmp_path / "w")
        srv.reset()
        cfg.write_text(cfg.read_text().replace('abbr="mc"', 'abbr="renamed"'))
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert srv.stats.total == 0
    result = report.result("renamed")
    assert result["correct"] == 6 and result["complete"]


async def test_mode_eval_finds_a_renamed_ppl_dataset_with_only_some_likelihoods(tmp_path):
    # Candidate C's request failed for every sample: the A and B likelihoods are
    # stored, no sample is complete. Renamed, the dataset was left out with exit 0
    # (only a complete likelihood set was looked for); under its old name it is missing.
    from harness.testing import Fault

    def c_fails(body: dict, attempt: int) -> Fault | None:
        return Fault("bad_request") if "Answer: C" in str(body) else None

    golds = write_mc(tmp_path / "mc.jsonl", 4)
    async with FakeOpenAI(scorer=knows_gold(golds), faults=c_fails) as srv:
        cfg = mc_config(tmp_path / "cfg.py", srv.base_url)
        first = await harness.evaluate(cfg, work_dir=tmp_path / "w")
        assert not first.complete
        cfg.write_text(cfg.read_text().replace('abbr="mc"', 'abbr="renamed"'))
        report = await harness.evaluate(cfg, work_dir=tmp_path / "w", mode="eval")
    assert report.result("renamed")["counts"] == {"missing": 4}


async def test_the_shipped_ppl_config_runs_from_the_command_line_with_model_api(tmp_path):
    async with FakeOpenAI() as srv:
        base = ["run", "bbh_ppl", "--limit", "2", "-q", "--model-base-url", srv.base_url,
                "--model", "fake-model"]
        chat = await anyio.run_process(cli(*base, "-w", str(tmp_path / "chat")),
                                       env=env(), check=False)
        done = await anyio.run_process(
            cli(*base, "--model-api", "completions", "-w", str(tmp_path / "w")),
            env=env(), check=False)
    # A text template on a chat endpoint cannot be scored by likelihood: refused, with
    # the fix; --model-api completions sends the candidates to /completions (echo).
    assert chat.returncode == 2 and b"--model-api completions" in chat.stderr
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result = json.loads((tmp_path / "w" / "summary.json").read_text())["results"]
    assert {r["dataset"] for r in result} >= {"bbh-date_understanding-ppl"}
    assert all(r["total"] == 2 and r["complete"] for r in result)
