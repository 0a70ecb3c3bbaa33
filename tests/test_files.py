"""lattice_tools.core.files: gzip-transparent input opening closes what it opened (and never stdin)."""
import gzip
import io
import sys

from lattice_tools.core.files import open_binary_input, open_text_input, read_text_lines


def _gz(tmp_path, text="a b\nc d\n"):
    p = tmp_path / "x.txt.gz"
    p.write_bytes(gzip.compress(text.encode()))
    return p


def test_gzip_input_closes_the_underlying_file(tmp_path):
    p = _gz(tmp_path)
    f = open_binary_input(str(p))
    raw = f.fileobj                       # the file open_binary_input opened under the gzip stream
    assert f.read() == b"a b\nc d\n"
    f.close()
    assert raw.closed
    with open_text_input(str(p)) as t:
        raw = t.buffer.fileobj
        assert t.read() == "a b\nc d\n"
    assert raw.closed


def test_read_text_lines_leaves_no_open_file(tmp_path, monkeypatch):
    p = _gz(tmp_path)
    opened = []
    real_open = open

    def spy(*args, **kwargs):
        f = real_open(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr("builtins.open", spy)
    assert list(read_text_lines(str(p))) == [(1, "a b"), (2, "c d")]
    monkeypatch.undo()
    assert opened and all(f.closed for f in opened)


def test_plain_input_is_the_file_itself(tmp_path):
    p = tmp_path / "x.txt"
    p.write_bytes(b"plain\n")
    with open_binary_input(str(p)) as f:
        assert f.read() == b"plain\n"
    assert f.closed


def test_gzip_stdin_is_not_closed(monkeypatch):
    buffer = io.BufferedReader(io.BytesIO(gzip.compress(b"from stdin\n")))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(buffer))
    f = open_binary_input("-")
    assert f.read() == b"from stdin\n"
    f.close()
    assert not buffer.closed
