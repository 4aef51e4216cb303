"""``pyweb new NAME`` makes a site that runs: ``pyweb check`` passes on it, and so does the
test it comes with (run by pytest in a process of its own, as its author would)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pyweb.new import SiteExists, create_site

pytestmark = pytest.mark.timeout(300)


def pyweb(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pyweb", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_a_new_site_passes_check_and_its_own_test(tmp_path):
    made = pyweb("new", "mysite", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "mysite"
    assert (root / "pyweb.toml").is_file() and not (root / "site" / "pyweb.toml").exists()
    for part in ("site/index.py", "site/api.py", "site/templates/about.html",
                 "tests/test_site.py", "README.md"):
        assert (root / part).is_file(), part
    checked = pyweb("check", "site", cwd=root)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 scripts, 1 services" in checked.stdout
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-3000:]
    assert "1 passed" in tested.stdout


def test_the_name_fills_the_templates(tmp_path):
    create_site(tmp_path / "shop-2")
    assert (tmp_path / "shop-2" / "README.md").read_text().startswith("# shop-2\n")
    assert "{{name}}" not in (tmp_path / "shop-2" / "pyweb.toml").read_text()


def test_nothing_is_written_over(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(SiteExists, match="already exists"):
        create_site(tmp_path / "taken")
    done = pyweb("new", "taken", cwd=tmp_path)
    assert done.returncode == 2 and "already exists" in done.stderr
    assert list((tmp_path / "taken").iterdir()) == []


@pytest.mark.parametrize("name", ["9lives", "my site", "class", "-x", "café!"])
def test_a_bad_name_is_refused_naming_it(tmp_path, name):
    with pytest.raises(ValueError, match="a site's name") as caught:
        create_site(tmp_path / name)
    assert repr(name) in str(caught.value)
    assert not (tmp_path / name).exists()
