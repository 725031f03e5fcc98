"""tools/check_site.py, the browser check of the built site: a page with a missing image or a console message
fails it, a clean page passes, and each page's screenshot is written. Needs Chromium (Debian's ``chromium``
package; .ci/run installs it)."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_site", ROOT / "tools" / "check_site.py")
check_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_site)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(check_site.find_chromium() is None,
                                 reason="Chromium is not installed (apt-get install chromium)")]

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000105f5d6a60000000049454e44ae426082")


@pytest.fixture
def site(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "dot.png").write_bytes(PNG)
    head = '<head><link rel="icon" href="dot.png"></head>'  # as the site's pages have (else /favicon.ico is asked)
    (tmp_path / "site" / "index.html").write_text(f'<html>{head}<body><h1>ok</h1><img src="dot.png"></body></html>')
    (tmp_path / "site" / "missing.html").write_text(f'<html>{head}<body><img src="nowhere.png"></body></html>')
    (tmp_path / "site" / "noisy.html").write_text(f'<html>{head}<body><script>notDefined();</script></body></html>')
    return tmp_path / "site"


def test_a_clean_page_passes_and_its_screenshot_is_written(site, tmp_path):
    assert check_site.check_site(site, tmp_path / "shots", {"home": ""}) == []
    assert (tmp_path / "shots" / "home.png").read_bytes()[:4] == b"\x89PNG"


def test_a_missing_image_and_a_console_error_fail_the_check(site, tmp_path):
    problems = check_site.check_site(site, tmp_path / "shots", {"missing": "missing.html", "noisy": "noisy.html"})
    assert len(problems) == 2, problems
    assert problems[0] == "missing.html: /nowhere.png answered 404"
    assert problems[1].startswith('noisy.html: console: "Uncaught ReferenceError: notDefined is not defined"')
