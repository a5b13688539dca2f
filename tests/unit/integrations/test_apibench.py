"""The APIBench converter: a folder the test writes in the repository's layout (hostile rows included),
and the committed folder ``data/sources/apibench``."""

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from camdf.data.io import read_domain, write_domain
from camdf.integrations.apibench.convert import (
    FRAMEWORKS, SourceError, argument_schema, convert_apibench, question, tool_name,
)

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "data" / "sources" / "apibench"
HF, TF, TORCH = FRAMEWORKS


def _api(name, call, domain="Text embedding", framework="TensorFlow Hub", func="Embed text", desc="Embeds text.",
         args=None):
    return {"domain": domain, "framework": framework, "functionality": func, "api_name": name, "api_call": call,
            "api_arguments": args, "python_environment_requirements": [], "example_code": "", "performance": {},
            "description": desc}


def _eval(instruction, call, api_name="x", inp=None, answer="<<<api_call>>>: the answer"):
    code = f"###Instruction: {instruction}\n" + (f"###Input: {inp}\n" if inp else "") + f"###Output: {answer}\n"
    return {"code": code, "api_call": call, "provider": "p", "api_data": {"api_name": api_name, "api_call": call}}


def _lines(rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _write(root: Path, files: dict[str, list], gz: tuple[str, ...] = ()) -> Path:
    for rel, rows in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel in gz:
            Path(f"{path}.gz").write_bytes(gzip.compress(_lines(rows).encode()))
        else:
            path.write_text(_lines(rows), encoding="utf-8")
    return root


USE = "hub.load('https://tfhub.dev/google/universal-sentence-encoder/4')"
USE_KERAS = "hub.KerasLayer('https://tfhub.dev/google/universal-sentence-encoder/4')"
RESNET = "torch.hub.load(repo_or_dir='pytorch/vision', model='resnet18', pretrained=True)"
GOOD = {
    HF.api_file: [
        _api("YituTech/conv-bert-base", "AutoModel.from_pretrained('YituTech/conv-bert-base')",
             domain="Natural Language Processing Feature Extraction", framework="Hugging Face Transformers",
             func="Feature Extraction", desc="A ConvBERT model.", args="N/A"),
        _api("abhishek/autotrain-iris", "joblib.load('model.joblib')", domain="Tabular Classification",
             framework="Joblib", func=["Tabular", "Classification"], desc="Iris.", args=["data"]),
        _api("abhishek/autotrain-wine", "joblib.load('model.joblib')", domain="Tabular Classification",
             framework="Joblib", func="Tabular", desc="Wine.", args="input_ids, attention_mask"),
        _api("YituTech/conv-bert-base", "pipeline('feature-extraction')", desc="a second row: ignored"),
    ],
    TF.api_file: [
        _api("model_id", USE, args={"input": "List of strings", "trainable": False}),
        _api("universal-sentence-encoder", USE, desc="the same call again: ignored"),
        _api("model_id", USE_KERAS, args=["input_text: A list of strings", "URL of the pre-trained model"]),
    ],
    TORCH.api_file: [
        _api("ResNet", RESNET, domain="Classification", framework="PyTorch", func="Image Recognition",
             desc="ResNet-18.", args=[{"name": "pretrained", "type": "bool", "description": "weights",
                                       "default": True}, {"name": "arch", "type": "ArchName"}]),
    ],
    HF.eval_file: [
        _eval("Embed my sentences.", "AutoModel.from_pretrained('YituTech/conv-bert-base')", "YituTech/conv-bert-base",
              inp="'Hello world'"),
        _eval("Classify wine samples.", "joblib.load('model.joblib')", "abhishek/autotrain-wine"),
        _eval("Unknown model.", "AutoModel.from_pretrained('nobody/none')", "nobody/none"),
    ],
    TF.eval_file: [
        _eval("Cluster my tweets.", USE),
        _eval("Cluster my tweets.", USE),  # a repeat: dropped
        _eval("Build a Keras text model.", USE_KERAS),
        _eval("Something else.", "hub.load('https://tfhub.dev/google/nothing/1')"),  # matches nothing: dropped
    ],
    TORCH.eval_file: [_eval("Recognise objects in photos.", RESNET)],
}


def test_fixture_converts_to_the_task_format(tmp_path):
    dom = convert_apibench(_write(tmp_path / "apibench", GOOD, gz=(TF.api_file, TORCH.eval_file)))
    assert [t.name for t in dom.tools] == [
        "hf_yitutech_conv_bert_base", "hf_abhishek_autotrain_iris", "hf_abhishek_autotrain_wine",
        "tfhub_google_universal_sentence_encoder_4", "tfhub_keras_google_universal_sentence_encoder_4",
        "torchhub_pytorch_vision_resnet18"]
    by = dom.tool_by_name
    assert all(t.kind == "read" and t.cost is None for t in dom.tools)
    assert by["hf_yitutech_conv_bert_base"].description == (
        "Hugging Face Transformers, YituTech/conv-bert-base (Natural Language Processing Feature Extraction; "
        "Feature Extraction): A ConvBERT model. Call: AutoModel.from_pretrained('YituTech/conv-bert-base')")
    assert by["hf_abhishek_autotrain_iris"].description.startswith(
        "Joblib, abhishek/autotrain-iris (Tabular Classification; Tabular, Classification): Iris.")
    assert by["tfhub_google_universal_sentence_encoder_4"].description == (
        "TensorFlow Hub, google/universal-sentence-encoder/4 (Text embedding; Embed text): Embeds text. Call: " + USE)
    assert by["torchhub_pytorch_vision_resnet18"].description.startswith("PyTorch, pytorch/vision resnet18 (")
    assert by["hf_yitutech_conv_bert_base"].parameters == {"type": "object", "properties": {}}
    assert by["hf_abhishek_autotrain_wine"].parameters == {
        "type": "object", "properties": {"input_ids": {"type": "string"}, "attention_mask": {"type": "string"}}}
    assert by["tfhub_google_universal_sentence_encoder_4"].parameters == {
        "type": "object", "properties": {"input": {"type": "string", "examples": ["List of strings"]},
                                         "trainable": {"type": "boolean", "examples": [False]}}}
    assert by["tfhub_keras_google_universal_sentence_encoder_4"].parameters == {
        "type": "object", "properties": {"input_text": {"type": "string", "description": "A list of strings"}},
        "description": "URL of the pre-trained model"}
    assert by["torchhub_pytorch_vision_resnet18"].parameters == {
        "type": "object", "properties": {"pretrained": {"type": "boolean", "description": "weights", "default": True},
                                         "arch": {"type": "string", "description": "(ArchName)"}}}
    tasks = {t.id: t for t in dom.tasks}
    assert list(tasks) == ["huggingface-1", "huggingface-2", "tensorflowhub-1", "tensorflowhub-3", "torchhub-1"]
    assert tasks["huggingface-1"].text == "Embed my sentences.\nInput: 'Hello world'"
    assert tasks["huggingface-2"].required == ("hf_abhishek_autotrain_wine",)  # by api_name, not the shared call
    assert tasks["tensorflowhub-3"].required == ("tfhub_keras_google_universal_sentence_encoder_4",)
    assert all(t.group == t.required[0] and t.candidates is None and not t.alternatives for t in dom.tasks)
    assert tasks["torchhub-1"].meta == {"framework": "torchhub", "line": 1, "api_call": RESNET,
                                        "domain_group": "torchhub:Classification"}
    assert "2 unmatched and 1 duplicate questions dropped; all 5 kept" in dom.source
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.required for t in back.tasks] == [t.required for t in dom.tasks] and len(back.tools) == 6


def test_the_subset_is_the_smallest_sha256_of_the_ids(tmp_path):
    root = _write(tmp_path, GOOD)
    ids = [t.id for t in convert_apibench(root, max_tasks=None).tasks]
    kept = [t.id for t in convert_apibench(root, max_tasks=3).tasks]
    assert kept == [i for i in ids if i in sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[:3]]
    assert "3 of 5 kept by SHA-256 of the id" in convert_apibench(root, max_tasks=3).source
    with pytest.raises(ValueError, match="max_tasks"):
        convert_apibench(root, max_tasks=0)


def test_hostile_rows_are_refused_naming_file_and_line(tmp_path):
    files = {**GOOD,
             TF.api_file: GOOD[TF.api_file] + ["[1, 2]", json.dumps({"api_name": "x"}), "{oops",
                                               json.dumps(_api("y", USE, func=3))],
             HF.eval_file: GOOD[HF.eval_file] + [json.dumps({"code": "no instruction", "api_call": "c",
                                                             "api_data": {"api_name": "YituTech/conv-bert-base"}}),
                                                 json.dumps({"code": "###Instruction: q", "api_call": "c"})],
             TORCH.eval_file: [json.dumps({"code": "###Instruction: q\n###Output: a", "api_data": {}})]}
    root = _write(tmp_path, files)
    with pytest.raises(SourceError) as err:
        convert_apibench(root)
    msg = str(err.value)
    tf, hf, torch = root / TF.api_file, root / HF.eval_file, root / TORCH.eval_file
    for expected in (f"{tf}:4: is list, expected an object",
                     f"{tf}:5: `api_call` missing or not a non-empty string",
                     f"{tf}:6: not JSON",
                     f"{tf}:7: `functionality` is not a string or a list of strings",
                     f"{hf}:4: `code` has no ###Instruction: question",
                     f"{hf}:5: no gold API: `api_data.api_name` missing or empty",
                     f"{torch}:1: no gold API: `api_call` missing or empty"):
        assert expected in msg, expected
    assert "7 problem(s)" in msg


def test_missing_folder_and_files_are_refused(tmp_path):
    with pytest.raises(SourceError, match="no such folder.*ShishirPatil/gorilla"):
        convert_apibench(tmp_path / "nope")
    files = {k: v for k, v in GOOD.items() if k != TORCH.api_file}
    root = _write(tmp_path / "partial", files)
    with pytest.raises(SourceError, match=f"{root / TORCH.api_file}: missing"):
        convert_apibench(root)


def test_helpers():
    assert question("### Instruction: Ask.\n### Output: answer ###Input: not mine") == "Ask."
    assert question("###Instruction: Only a question, no answer.") == "Only a question, no answer."
    assert question("no marker") == "" and question("###Instruction: \n###Output: x") == ""
    assert argument_schema(None) == argument_schema("n/a") == argument_schema([]) == {"type": "object",
                                                                                      "properties": {}}
    assert argument_schema([{"model_id": "a URL"}]) == {
        "type": "object", "properties": {"model_id": {"type": "string", "description": "a URL"}}}
    url = "https://tfhub.dev/google/imagenet/mobilenet_v3_large_100_224/feature_vector/5"
    long = {"api_call": f"hub.KerasLayer('{url}')", "api_name": "x"}
    name = tool_name(TF, long)
    assert len(name) <= 64 and name.startswith("tfhub_keras_google_imagenet_mobilenet_v3_large_100_224_")
    assert tool_name(TF, {**long, "api_call": long["api_call"].replace("/5", "/4")}) != name
    assert tool_name(TORCH, {"api_call": "torch.hub.load(repo_or_dir='pytorch/fairseq')", "api_name": "x"}) == \
        "torchhub_pytorch_fairseq"


def test_the_committed_folder(tmp_path):
    dom = convert_apibench(COMMITTED)
    assert len(dom.tools) == 1081 and len({t.name for t in dom.tools}) == 1081
    assert all(len(t.name) <= 64 for t in dom.tools)
    assert Counter(t.name.split("_", 1)[0] for t in dom.tools) == {"hf": 907, "tfhub": 80, "torchhub": 94}
    assert len(dom.tasks) == 1500 and all(len(t.required) == 1 for t in dom.tasks)
    assert Counter(t.meta["framework"] for t in dom.tasks) == {"huggingface": 767, "tensorflowhub": 578,
                                                               "torchhub": 155}
    assert len({t.group for t in dom.tasks}) == 657 and len({t.meta["domain_group"] for t in dom.tasks}) == 56
    assert "0 unmatched and 0 duplicate questions dropped; 1500 of 1785 kept" in dom.source
    full = convert_apibench(COMMITTED, max_tasks=None)
    assert Counter(t.meta["framework"] for t in full.tasks) == {"huggingface": 911, "tensorflowhub": 688,
                                                                "torchhub": 186}
    assert len({t.required[0] for t in full.tasks}) == 728
    by_id = {t.id: t for t in full.tasks}
    # hand-checked from the files: huggingface_eval.json line 1, torchhub_eval.json line 1
    assert by_id["huggingface-1"].required == ("hf_princeton_nlp_unsup_simcse_roberta_base",)
    assert by_id["huggingface-1"].text.startswith("Design a feature for a social media website")
    assert by_id["torchhub-1"].required == ("torchhub_facebookresearch_pytorchvideo_slow_r50",)
    assert by_id["torchhub-1"].text == "What is an API that can be used to classify sports activities in videos?"
    write_domain(dom, tmp_path / "out")
    back = read_domain(tmp_path / "out", ["read"])
    assert [t.to_json() for t in back.tasks] == [t.to_json() for t in dom.tasks]
    assert [t.to_json() for t in back.tools] == [t.to_json() for t in dom.tools]
    again = convert_apibench(COMMITTED)
    assert [t.to_json() for t in again.tools] == [t.to_json() for t in dom.tools]
    assert [t.to_json() for t in again.tasks] == [t.to_json() for t in dom.tasks]
