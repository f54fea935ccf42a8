"""The cache folder: SPEECHPERF_CACHE_DIR when set, else the platform's user cache folder (platformdirs)."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from speechperf.cache import CACHE_ENV, cache_dir


def test_the_variable_overrides_the_platform_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.setenv(CACHE_ENV, "~/sp-cache")
    assert cache_dir() == Path.home() / "sp-cache"  # ~ is expanded


def test_without_the_variable_it_is_the_platform_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    assert cache_dir() == platformdirs.user_cache_path("speechperf", appauthor=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG convention is Linux's")
def test_on_linux_it_follows_xdg_cache_home_then_home(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "speechperf"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "speechperf"  # what speechperf used before platformdirs
