"""The access log of ``mnemolog serve`` with a key live, read from what the server printed:
whatever a client puts in its request line (a key in the query or the path, words of its
memories in the dashboard's filters, escapes and line breaks), no line holds a credential,
a control character, or more or less than one request."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ..servers import add_key, mnemolog_server, raw_request

# time, method, target, status, duration, size, client, and the agent once a key opened the door
LINE = re.compile(
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+ (?P<target>\S+) (?P<status>\d{3})"
    r" [\d.]+ ms \d+ B 127\.0\.0\.1( agent=\S+)?"
)
MEMORY_WORDS = "zqmarmalade"


@dataclass
class Served:
    base_url: str
    token: str
    printed: Path

    def client(self, **headers: str) -> httpx.Client:
        auth = {"authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.base_url, headers={**auth, **headers}, timeout=30)

    def lines(self) -> list[str]:
        """The access lines printed so far (the banner before them left out)."""
        text = self.printed.read_text(encoding="utf-8", errors="replace")
        return [line for line in text.splitlines() if re.match(r"\d{4}-\d\d-\d\d ", line)]

    def lines_after(self, before: int, count: int) -> list[str]:
        """The lines after the first ``before``, once there are ``count`` of them: a line is
        written after its answer's last byte, so it may come a moment after the answer."""
        deadline = time.monotonic() + 10
        while len(new := self.lines()[before:]) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return new


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("access")
    data_dir = root / "data"
    token = add_key(data_dir, "alice")
    printed = root / "server.log"
    env = {"MNEMOLOG_ACCESS_LOG": "true"}
    with mnemolog_server(data_dir, env, printed) as (base_url, _):
        yield Served(base_url, token, printed)


def test_a_key_in_the_url_is_in_no_line_of_the_log(served: Served) -> None:
    key = served.token
    secret = key.split("_", 2)[2]
    before = len(served.lines())
    query = f"access_token={key}&token={secret}&api_key={key}"
    with httpx.Client(base_url=served.base_url, timeout=30) as anyone:
        # Refused at the door (no Authorization header): a 401, the key only in the URL.
        assert anyone.get(f"/memories?{query}").status_code == 401
        assert anyone.post(f"/search?{query}", json={"q": "x"}).status_code == 401
        assert anyone.get(f"/v1/models?{query}").status_code == 401
        # Refused before that, for a Host the server does not answer to.
        refused = anyone.get(f"/memories?{query}", headers={"host": "evil.example"})
        assert refused.status_code == 421
        # In the path: an unknown route, and as a query parameter's name.
        assert anyone.get(f"/memories/{key}").status_code == 401
        assert anyone.get(f"/{secret}").status_code == 401
        assert anyone.get(f"/health?{key}").status_code == 400  # an unknown parameter
    with served.client() as alice:
        assert alice.get(f"/nope?{query}").status_code == 404
        assert alice.get(f"/memories/{key}").status_code == 404
        assert alice.get(f"/memories/{secret}").status_code == 404
    lines = served.lines_after(before, 10)
    printed = served.printed.read_text()
    assert secret not in printed and secret[:20] not in printed
    # Each request was logged (the refusals included), with its parameters' names only.
    assert any(
        re.fullmatch(LINE, x) and " /memories?access_token&token&api_key 401 " in x for x in lines
    ), lines
    assert any(" /memories?access_token&token&api_key 421 " in x for x in lines), lines


def test_the_dashboards_filters_put_no_memory_words_in_the_log(served: Served) -> None:
    before = len(served.lines())
    with served.client() as alice:
        written = alice.post(
            "/memories",
            json={"containerTag": "c", "memories": [{"content": f"Ada makes {MEMORY_WORDS}"}]},
        )
        assert written.status_code == 200, written.text
        page = alice.get("/ui/memories", params={"q": MEMORY_WORDS, "container": "c"})
        assert page.status_code == 200 and MEMORY_WORDS in page.text
        listed = alice.get("/memories", params={"containerTag": "c", "q": MEMORY_WORDS})
        assert listed.status_code in (200, 400)
    lines = served.lines_after(before, 3)
    assert any(" /ui/memories?q&container 200 " in x for x in lines), lines
    assert MEMORY_WORDS not in served.printed.read_text()


@pytest.mark.parametrize(
    ("target", "host"),
    [
        ("/memories%0a2026-01-01%2000:00:00%20POST%20/memories%20200", None),
        ("/x%0d%0aFORGED", None),
        ("/x%1b[31mRED%1b[0m%07", None),
        ("/x%e2%80%a8%c2%85%e2%80%aeevil", None),  # line separator, NEL, bidi override
        ("/x%20200%201.0%20ms%200%20B%2010.0.0.1%20agent=root", None),  # fields of a line
        ("/memories?a%0ab=%0d%0a1&%1b[2J", None),
        ("/memories%0aFORGED", "evil.example"),  # 421: no key needed to reach the log
    ],
)
def test_a_request_line_cannot_write_a_line_of_its_own(
    served: Served, target: str, host: str | None
) -> None:
    before = len(served.lines())
    offset = served.printed.stat().st_size
    status, _ = raw_request(served.base_url, target, host)
    assert status in (401, 421)
    new = served.lines_after(before, 1)
    text = served.printed.read_bytes()[offset:].decode("utf-8")
    assert text.count("\n") == 1 and text.endswith("\n"), text
    assert not [c for c in text[:-1] if not c.isprintable()], text
    assert len(new) == 1, new
    (line,) = new
    match = LINE.fullmatch(line)
    assert match is not None and match["status"] == str(status), line
    # uvicorn's own access log is off: one line per request, ours.
    assert "HTTP/1.1" not in text
