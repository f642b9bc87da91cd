"""The dashboard's doors: a login that sets a strict session cookie, never a key in a URL;
every page scoped to the key's containers; no page or asset that reaches another host; the
Content-Security-Policy on every page."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from mnemolog.web.sessions import COOKIE, MAX_SESSIONS, MAX_SESSIONS_PER_AGENT

from ..servers import settled_head
from .conftest import Seeded, shot

pytestmark = pytest.mark.slow

# Every text written into ``home``: none may show to a key that reaches only ``work``.
HOME_TEXTS = ("Porto", "green tea", "bicycle", "goldfish", "where does Alice live")


def logged_in(browser: Browser, store: Seeded, who: str) -> Page:
    page = browser.new_context(base_url=store.base_url).new_page()
    page.goto("/ui/memories")
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Fmemories$"))  # no key yet
    page.get_by_label("API key").fill(store.tokens[who])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/ui/memories"))
    return page


def test_a_login_sets_a_strict_session_cookie(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "admin")
    (cookie,) = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert keyed_store.tokens["admin"] not in cookie["value"]
    assert all(keyed_store.tokens["admin"] not in url for url in [page.url])
    expect(page.get_by_text("admin (admin)")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(r"/ui/login$"))
    page.goto("/ui/memories")
    expect(page).to_have_url(re.compile(r"/ui/login\?next="))  # the session is gone


def test_a_wrong_key_opens_nothing(browser: Browser, keyed_store: Seeded) -> None:
    page = browser.new_context(base_url=keyed_store.base_url).new_page()
    page.goto("/ui/login")
    page.get_by_label("API key").fill("mnl_0123456789abcdef_" + "x" * 43)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("That key opens nothing here.")
    assert page.context.cookies() == []
    # Without a session a page is the login page, and an action is sent there before it runs.
    with httpx.Client(base_url=keyed_store.base_url) as client:
        assert client.get("/ui/traces").headers["location"] == "/ui/login?next=%2Fui%2Ftraces"
        forget = client.post(
            f"/ui/memories/{keyed_store.ids['porto']}/forget", data={"reason": "x"}
        )
        assert forget.status_code == 307
        assert forget.headers["location"].startswith("/ui/login?form=%2Fui%2Fmemories%2F")
        # Posted on there, it is shown back, never acted on.
        shown = client.post(forget.headers["location"], data={"reason": "x"})
        assert shown.status_code == 401 and "Your session has ended" in shown.text
    with keyed_store.client("admin") as admin:
        assert admin.get(f"/memories/{keyed_store.ids['porto']}").json()["forgotten"] is False


def test_a_form_sent_after_its_session_ended_is_kept_across_the_login(
    browser: Browser, keyed_store: Seeded
) -> None:
    page = logged_in(browser, keyed_store, "admin")
    memory_id = keyed_store.ids["tea"]
    page.goto(f"/ui/memories/{memory_id}")
    # The server no longer knows the session (it restarted; the cookie is stale).
    page.context.add_cookies([{"name": COOKIE, "value": "stale", "url": keyed_store.base_url}])
    page.get_by_label(re.compile("Forget it")).fill("she switched to coffee")
    page.get_by_role("button", name="Forget").click()
    expect(page).to_have_url(re.compile(r"/ui/login\?"))
    expect(page.get_by_role("alert")).to_contain_text("Your session has ended")
    assert "error" not in page.content().split("<main>")[1][:40]  # a page, not raw JSON
    page.get_by_label("API key").fill(keyed_store.tokens["admin"])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(rf"/ui/memories/{memory_id}$"))
    expect(page.get_by_label(re.compile("Forget it"))).to_have_value("she switched to coffee")
    with keyed_store.client("admin") as admin:  # nothing ran unasked
        assert admin.get(f"/memories/{memory_id}").json()["forgotten"] is False
    page.get_by_role("button", name="Forget").click()
    expect(page.locator(".badge.forgotten")).to_contain_text("she switched to coffee")
    page.get_by_role("button", name="Restore").click()
    expect(page.locator(".badge.live")).to_have_text("live")


def test_a_login_returns_to_the_page_asked_for_and_never_to_another_host(
    browser: Browser, keyed_store: Seeded
) -> None:
    page = browser.new_context(base_url=keyed_store.base_url).new_page()
    asked = f"/ui/traces/{keyed_store.traces['work']}"
    page.goto(asked)
    expect(page).to_have_url(re.compile(r"/ui/login\?next="))
    page.get_by_label("API key").fill(keyed_store.tokens["admin"])
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{keyed_store.base_url}{asked}")
    expect(page.locator("q.query")).to_have_text("when does the deploy key rotate")
    with httpx.Client(base_url=keyed_store.base_url, timeout=30) as client:
        for hostile in (
            "https://evil.example/ui/memories",
            "//evil.example/ui/memories",
            "/\\evil.example/ui/memories",
            "/ui/../evil",
            "javascript:alert(1)",
        ):
            client.cookies.clear()
            login = client.get("/ui/login", params={"next": hostile})
            assert "evil" not in login.text and "javascript" not in login.text
            answer = client.post(
                "/ui/login",
                data={
                    "csrf": csrf_of(login.text),
                    "key": keyed_store.tokens["admin"],
                    "next": hostile,
                },
            )
            assert answer.status_code == 303, hostile
            assert answer.headers["location"] == "/ui/memories", hostile


def test_a_scoped_key_sees_nothing_of_another_container(
    browser: Browser, keyed_store: Seeded
) -> None:
    page = logged_in(browser, keyed_store, "worker")
    visited: list[str] = []
    for status in ("live", "superseded", "forgotten", "flagged", "quarantined"):
        page.goto(f"/ui/memories?status={status}")
        visited.append(page.content())
    expect(page.get_by_role("link", name=re.compile("deploy key"))).to_have_count(0)
    page.goto("/ui/memories?status=live")
    expect(page.get_by_role("link", name=re.compile("deploy key"))).to_be_visible()
    visited.append(page.content())
    shot(page, "scoped-memories")
    page.goto(f"/ui/memories/{keyed_store.ids['deploy']}")
    visited.append(page.content())
    page.goto("/ui/traces")
    visited.append(page.content())
    page.goto(f"/ui/traces/{keyed_store.traces['work']}")
    visited.append(page.content())
    for own in ("/ui/asof", f"/ui/asof?container=work&at=0&to={10**6}", "/ui/agents"):
        page.goto(own)
        visited.append(page.content())
    expect(page.get_by_role("heading", name="worker")).to_be_visible()
    # Another container's pages, by their URLs: as if they did not exist.
    for url in (
        f"/ui/memories/{keyed_store.ids['porto']}",
        f"/ui/memories/{keyed_store.ids['porto']}/erase",
        f"/ui/traces/{keyed_store.traces['home']}",
        "/ui/memories?container=home",
        "/ui/traces?container=home",
        "/ui/memories?container=",
        "/ui/activity",
        "/ui/audit",
        "/ui/asof?container=home",
        "/ui/agents/admin",
    ):
        answer = page.goto(url)
        assert answer is not None and answer.status in (403, 404), url
        visited.append(page.content())
    for html in visited:
        for text in HOME_TEXTS:
            assert text not in html
    # Nor may its forms act on another container's memory.
    page.goto(f"/ui/memories/{keyed_store.ids['deploy']}")
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value")
    refused = page.request.post(
        f"/ui/memories/{keyed_store.ids['porto']}/forget", form={"csrf": csrf or "", "reason": "x"}
    )
    assert refused.status == 404
    home = keyed_store.traces["home"]
    rated = page.request.post(
        f"/ui/traces/{home}/feedback", form={"csrf": csrf or "", "versionId": "v", "grade": "3"}
    )
    assert rated.status == 404  # as if the trace did not exist
    with keyed_store.client("admin") as admin:
        assert admin.get(f"/memories/{keyed_store.ids['porto']}").json()["forgotten"] is False
        assert admin.get(f"/inspect/{home}").json()["feedback"] == []


def test_no_page_reaches_another_host_and_each_sends_its_policy(
    browser: Browser, open_store: Seeded
) -> None:
    page = browser.new_context(base_url=open_store.base_url).new_page()
    own = urlsplit(open_store.base_url).netloc
    requested: list[str] = []
    violations: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda message: violations.append(message.text))
    urls = [
        "/ui/memories",
        "/ui/memories?status=forgotten",
        f"/ui/memories/{open_store.ids['porto']}",
        f"/ui/memories/{open_store.ids['porto']}/erase",
        "/ui/traces",
        f"/ui/traces/{open_store.traces['home']}",
        "/ui/login",
        "/ui/memories/no-such-memory",
        "/ui/asof?container=home",
        "/ui/agents",
        "/ui/agents/local",
        "/ui/activity",
        "/ui/audit",
        "/ui/ask",
        "/ui/agents/local/rollback?sinceSeq=1",
    ]
    for url in urls:
        answer = page.goto(url)
        assert answer is not None
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        html = page.content()
        assert "<script>" not in html and not re.search(r"\son[a-z]+=", html)
        for link in re.findall(r'(?:src|href|action)="([^"]+)"', html):
            assert not re.match(r"^(?:[a-z]+:)?//", link), link
    assert requested and all(urlsplit(url).netloc == own for url in requested)
    assert not [v for v in violations if "Content Security Policy" in v]


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found.group(1)


def http_login(client: httpx.Client, token: str) -> httpx.Response:
    """A login through the form, as a browser without a session posts it."""
    client.cookies.clear()
    csrf = csrf_of(client.get("/ui/login").text)  # the anonymous token
    answer = client.post("/ui/login", data={"csrf": csrf, "key": token})
    client.cookies.clear()
    return answer


def session_of(answer: httpx.Response) -> str:
    assert answer.status_code == 303, answer.text
    return answer.headers["set-cookie"].split(";")[0].partition("=")[2]


def in_session(store: Seeded, session: str, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=store.base_url, cookies={COOKIE: session}, headers=headers)


def opens(store: Seeded, session: str) -> bool:
    """Whether a session cookie still opens the dashboard."""
    with in_session(store, session) as client:
        return client.get("/ui/memories").status_code == 200


def test_one_key_logging_in_again_and_again_logs_no_one_else_out(keyed_store: Seeded) -> None:
    with httpx.Client(base_url=keyed_store.base_url, timeout=30) as client:
        admin = session_of(http_login(client, keyed_store.tokens["admin"]))
        worker = [
            session_of(http_login(client, keyed_store.tokens["worker"]))
            for _ in range(MAX_SESSIONS + 50)
        ]
    assert opens(keyed_store, admin)
    # The worker keeps its latest sessions only: its own oldest made way.
    assert opens(keyed_store, worker[-1]) and opens(keyed_store, worker[-MAX_SESSIONS_PER_AGENT])
    assert not opens(keyed_store, worker[0])
    assert not opens(keyed_store, worker[-MAX_SESSIONS_PER_AGENT - 1])


def attributes(set_cookie: str) -> dict[str, str]:
    """A Set-Cookie's name (under "") and its attributes, names lowered."""
    name_value, *rest = [part.strip() for part in set_cookie.split(";")]
    found = {k.lower(): v for k, _, v in (part.partition("=") for part in rest)}
    return {"": name_value.partition("=")[0], **found}


def login_and_logout(store: Seeded, **headers: str) -> tuple[dict[str, str], dict[str, str]]:
    """The attributes of the cookie a login sets and of the one its logout sets."""
    with httpx.Client(base_url=store.base_url, headers=headers, timeout=30) as client:
        login = http_login(client, store.tokens["admin"])
    session = session_of(login)
    with in_session(store, session, **headers) as client:
        csrf = csrf_of(client.get("/ui/memories").text)
        logout = client.post("/ui/logout", data={"csrf": csrf})
    assert logout.status_code == 303 and logout.headers["location"] == "/ui/login"
    assert not opens(store, session)
    return attributes(login.headers["set-cookie"]), attributes(logout.headers["set-cookie"])


def test_login_and_logout_cookies_carry_the_same_attributes(keyed_store: Seeded) -> None:
    set_in, set_out = login_and_logout(keyed_store)
    assert set_out.pop("max-age") == "0" and int(set_in.pop("max-age")) > 0
    assert set_in == set_out == {"": COOKIE, "path": "/", "httponly": "", "samesite": "Strict"}


def test_behind_https_every_cookie_is_secure(keyed_store: Seeded) -> None:
    # A reverse proxy on this machine that has TLS says so (uvicorn trusts loopback's
    # X-Forwarded-Proto): the cookie is then never sent over plain HTTP.
    set_in, set_out = login_and_logout(keyed_store, **{"x-forwarded-proto": "https"})
    assert "secure" in set_in and "secure" in set_out


def test_a_scoped_key_asks_and_follows_only_its_own_containers(
    browser: Browser, keyed_store: Seeded
) -> None:
    deploy, ticket = keyed_store.ids["deploy"], keyed_store.ids["ticket"]
    with keyed_store.client("admin") as admin:
        # A recall over every container served the deploy memory too: not the worker's to see.
        wide = admin.post("/search", json={"q": "deploy key rotates Friday"}).json()
        assert deploy in [r["id"] for r in wide["results"]]
        # The admin says a worker's memory helped: a signal on the worker's trust.
        found = admin.post(
            "/search", json={"q": "Ticket OPS-7 migration", "containerTag": "work"}
        ).json()
        version = next(r["versionId"] for r in found["results"] if r["id"] == ticket)
        used = admin.post(f"/recalls/{found['traceId']}/used", json={"versionIds": [version]})
        assert used.status_code == 200, used.text
        head = settled_head(admin)
    page = logged_in(browser, keyed_store, "worker")
    page.goto("/ui/ask")
    expect(page.get_by_label("Container").locator("option")).to_have_text(["work"])
    visited = [page.content()]
    page.get_by_label(re.compile("Question")).fill("when does the deploy key rotate")
    page.get_by_role("button", name="Ask").click()
    expect(page).to_have_url(re.compile(r"/ui/traces/trc_[0-9a-f]+$"))
    asked = page.url.rsplit("/", 1)[1]
    visited.append(page.content())
    # Another container, or every one, cannot be asked about: refused, and nothing recorded.
    csrf = page.locator('input[name="csrf"]').first.get_attribute("value") or ""
    for container in ("home", ""):
        refused = page.request.post(
            "/ui/ask", form={"csrf": csrf, "container": container, "q": "where does Alice live"}
        )
        assert refused.status == 403, container
    answer = page.goto("/ui/ask?container=home")
    assert answer is not None and answer.status == 403
    # The deploy memory's page lists the worker's recall and the admin's of ``work``; never
    # the admin's over every container.
    page.goto(f"/ui/memories/{deploy}")
    served = page.locator("table.served tbody tr")
    expect(served.first.locator("a")).to_have_attribute("href", f"/ui/traces/{asked}")
    expect(served.filter(has_text="when does the deploy key rotate")).to_have_count(2)
    expect(served.filter(has_text="deploy key rotates Friday")).to_have_count(0)
    visited.append(page.content())
    # Its own agent's signals name their memory with its text.
    page.goto("/ui/agents/worker")
    signal = page.locator("table.signals tbody tr").filter(has_text="used")
    expect(signal.locator(".snippet")).to_have_text("Ticket OPS-7 waits on the database migration")
    visited.append(page.content())
    for html in visited:
        for text in HOME_TEXTS:
            assert text not in html
    with keyed_store.client("admin") as admin:
        assert settled_head(admin) == head + 1  # the worker's one recall
        trace = admin.get(f"/inspect/{asked}").json()
        assert (trace["agentId"], trace["containerTag"]) == ("worker", "work")
        admin_view = admin.get(f"/ui/memories/{deploy}").text
    assert "deploy key rotates Friday" in admin_view  # the admin sees its wide recall


def test_a_scoped_key_adds_memories_to_its_own_containers_only(
    browser: Browser, keyed_store: Seeded
) -> None:
    page = logged_in(browser, keyed_store, "worker")
    page.goto("/ui/memories")
    csrf = page.locator('form.add input[name="csrf"]').get_attribute("value") or ""
    refused = page.request.post(
        "/ui/memories", form={"csrf": csrf, "container": "home", "content": "Planted fact"}
    )
    assert refused.status == 403
    with keyed_store.client("admin") as admin:
        home = admin.get("/memories", params={"containerTag": "home", "limit": 500}).json()
    assert not any(m["content"] == "Planted fact" for m in home["memories"])
    stale = page.request.post(
        "/ui/memories", form={"csrf": "forged", "container": "work", "content": "Planted fact"}
    )
    assert stale.status == 403


def test_a_scoped_key_cannot_erase_another_container(browser: Browser, keyed_store: Seeded) -> None:
    page = logged_in(browser, keyed_store, "worker")
    page.goto("/ui/memories")
    csrf = page.locator('form.add input[name="csrf"]').get_attribute("value") or ""
    answer = page.goto("/ui/containers/home/erase")
    assert answer is not None and answer.status in (403, 404)
    refused = page.request.post(
        "/ui/containers/home/erase", form={"csrf": csrf, "confirm": "home", "force": "on"}
    )
    assert refused.status in (403, 404)
    with keyed_store.client("admin") as admin:
        home = admin.get("/memories", params={"containerTag": "home"}).json()
    assert home["total"] > 0
