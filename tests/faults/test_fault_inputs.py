"""Bad input caught early: one line naming the cause and the fix, at start-up or collection,
never a traceback per item or a band for nothing."""

from __future__ import annotations

import pytest

from pytest_ragdive.engine.documents.loading import load_documents


def test_a_role_typo_in_the_marker_stops_the_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest_ragdive as ragdive

        @ragdive.conversation(role="precsie")
        def test_bot(ragdive_dialogue):
            pass
    """)
    result = pytester.runpytest()
    assert result.ret != pytest.ExitCode.OK
    out = result.stdout.str() + result.stderr.str()
    assert "ragdive.conversation: unknown role 'precsie'; use one of precise" in out
    # one error for the module, not one per item (the short summary repeats it, cut to the
    # terminal's width, so count the error's own lines)
    assert sum(line.startswith("E ") and "unknown role" in line
               for line in result.stdout.lines) == 1
    result.assert_outcomes(errors=1)


def test_a_document_that_is_not_utf8_is_named(tmp_path) -> None:
    (tmp_path / "latin1.md").write_bytes("Caf\xe9 opens at nine.".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.md: not UTF-8 text .* save it as UTF-8"):
        load_documents("*.md", root=tmp_path)


def test_an_empty_document_gets_no_band(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("kb").mkdir()
    pytester.path.joinpath("kb", "empty.md").write_text("  \n")
    pytester.makeini("[pytest]\nragdive_documents = kb/*.md\n")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini ragdive_documents: document 'empty' has no text" in result.stderr.str()


def test_a_documents_file_with_no_lines_is_named(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("kb.jsonl").write_text("\n  \n")
    pytester.makeini("[pytest]\nragdive_documents = kb.jsonl\n")
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini ragdive_documents: 'kb.jsonl' holds no documents" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_broken_document_in_a_conftest_is_named_at_its_line(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("kb").mkdir()
    pytester.path.joinpath("kb", "menu.md").write_bytes("Caf\xe9 opens at nine.".encode("latin-1"))
    pytester.makeconftest("""
        import pytest_ragdive as ragdive

        ragdive_document = ragdive.document_fixture("kb/*.md")
    """)
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret != pytest.ExitCode.OK
    err = result.stderr.str()
    assert "ragdive.document_fixture('kb/*.md'): " in err
    assert "menu.md: not UTF-8 text" in err and "save it as UTF-8" in err
    # the user's line and the cause, not the plugin's frames
    assert 'ragdive_document = ragdive.document_fixture("kb/*.md")' in err
    assert "documents.py" not in err and "marker.py" not in err
