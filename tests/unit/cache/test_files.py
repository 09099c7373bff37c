"""minbw.cache.files.write_whole, the cache room's one writer (the provider cache, its sync record, the synced state,
the desired state): a file written whole or not at all, its temporary file never left behind; an OSError returned as
False, or raised with ``strict`` (the provider cache: the exporter reports a cache it could not save)."""
from __future__ import annotations

import json

import pytest

from minbw.cache.files import write_whole
from minbw.cache.providers import ProviderCache, read_sync_record, record_sync


def test_a_file_is_written_whole_with_nothing_left_beside_it(tmp_path):
    path = tmp_path / "new" / "f.json"
    assert write_whole(path, ".t-", lambda f: json.dump({"a": 1}, f)) is True
    assert json.loads(path.read_text()) == {"a": 1}
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json"]
    assert (path.parent.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)


@pytest.mark.parametrize("strict", [False, True])
def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path, strict):
    path = tmp_path / "f.json"
    path.write_text("old")

    def failing(f):
        f.write("half")
        raise OSError(28, "No space left on device")

    if strict:
        with pytest.raises(OSError, match="No space left"):
            write_whole(path, ".t-", failing, strict=True)
    else:
        assert write_whole(path, ".t-", failing) is False
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


@pytest.mark.parametrize("strict", [False, True])
def test_a_folder_that_cannot_be_made_is_false_or_raised(tmp_path, strict):
    (tmp_path / "file").write_text("")  # a file where the folder should be: even root cannot make it
    path = tmp_path / "file" / "f.json"
    if strict:
        with pytest.raises(OSError):
            write_whole(path, ".t-", lambda f: f.write("x"), strict=True)
    else:
        assert write_whole(path, ".t-", lambda f: f.write("x")) is False


def test_any_other_error_is_raised_and_the_temporary_file_removed(tmp_path):
    with pytest.raises(KeyError):
        write_whole(tmp_path / "f.json", ".t-", lambda f: {}["missing"])
    assert list(tmp_path.iterdir()) == []


def test_the_provider_cache_and_its_sync_record_raise_what_they_cannot_write(tmp_path):
    # a folder where each file goes (even root cannot rename a file over it): the rename fails, nothing is left
    cache = ProviderCache(tmp_path / "providers-x.json", "http://placement", clock=lambda: 1000.0)
    cache.path.mkdir()
    (cache.path / "in-the-way").write_text("")
    cache.put("a", 3, "h:a", None, set(), {})
    with pytest.raises(OSError):
        cache.save()
    (tmp_path / "sync-x.json").mkdir()
    (tmp_path / "sync-x.json" / "in-the-way").write_text("")
    with pytest.raises(OSError):
        record_sync(cache.path, ok=True, writes=1, clock=lambda: 100.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["providers-x.json", "providers-x.json.lock", "sync-x.json"]


def test_a_saved_cache_knows_its_file_and_reads_nothing_again(tmp_path, monkeypatch):
    cache = ProviderCache(tmp_path / "providers-x.json", "http://placement", clock=lambda: 1000.0)
    cache.put("a", 3, "h:a", None, set(), {})
    cache.save()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["providers-x.json", "providers-x.json.lock"]
    assert ProviderCache(cache.path, "http://placement").entries.keys() == {"a"}
    monkeypatch.setattr(cache, "_load", lambda: pytest.fail("the file it saved was read again"))
    cache.save()  # no changes, the file as it saved it: nothing read
    record_sync(cache.path, ok=True, writes=1, clock=lambda: 100.0)
    assert read_sync_record(cache.path) == {"time": 100.0, "ok": True, "writes": 1, "last_success": 100.0}
