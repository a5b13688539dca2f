"""Rankers found by folder: each scorer module's SCORER_FUNCTIONS, read from the source (nothing imported)."""

import pytest

from camdf.rankers import SCORER_FUNCTIONS, declared_scorers


def test_the_package_declares_every_shipped_scorer():
    assert set(SCORER_FUNCTIONS) == {"bm25", "dense", "supervised", "prior", "hybrid", "noisy_oracle", "pairwise", "rerank",
                                    "crosscat"}
    assert SCORER_FUNCTIONS["prior"] == "supervised:score_prior"


def test_a_new_module_is_found_and_a_helper_is_not(tmp_path):
    (tmp_path / "short.py").write_text('SCORER_FUNCTIONS = {"short": "score_short"}\n\ndef score_short(p): ...\n')
    (tmp_path / "helper.py").write_text("X = 1\n")
    (tmp_path / "_private.py").write_text('SCORER_FUNCTIONS = {"hidden": "f"}\n')
    assert declared_scorers(tmp_path) == {"short": "short:score_short"}


@pytest.mark.parametrize("text,phrase", [
    ('SCORER_FUNCTIONS = {"a": score_a}\n', "expected a dict literal"),
    ('SCORER_FUNCTIONS = ["a"]\n', "expected a dict literal"),
])
def test_a_declaration_that_is_not_a_literal_is_refused_naming_the_line(text, phrase, tmp_path):
    (tmp_path / "bad.py").write_text("import x\n" + text)
    with pytest.raises(ValueError, match=phrase) as err:
        declared_scorers(tmp_path)
    assert f"{tmp_path / 'bad.py'}:2:" in str(err.value)


def test_one_name_twice_is_refused(tmp_path):
    (tmp_path / "a.py").write_text('SCORER_FUNCTIONS = {"same": "f"}\n')
    (tmp_path / "b.py").write_text('SCORER_FUNCTIONS = {"same": "g"}\n')
    with pytest.raises(ValueError, match="declared twice"):
        declared_scorers(tmp_path)
