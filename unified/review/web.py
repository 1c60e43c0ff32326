"""The review web app (Starlette): routes, the token check, the pages.

Every request must carry the server's token as ``?token=…`` (links and forms carry it);
one without it, or with another, is refused with 403 before any route runs — the server
listens on 127.0.0.1, but any local process or web page could otherwise reach it.

Routes (``filters``: ``metric``, ``backend``, ``verdict`` query parameters, carried along):

- ``GET /``                the first open sample of this person's order, or "all done"
- ``GET /sample?id=ID``    one sample's screen
- ``POST /label``          form ``id``, ``metric``, ``value``, ``note``: appends a label, then
                           the same sample while it has a metric this person has not labelled,
                           else the first open sample (Post/Redirect/Get: a reload resends nothing)
- ``POST /skip``           form ``id``: appends a skip, then the first open sample
- ``GET /agreement``       the people's agreement per metric
- ``GET /static/…``        the stylesheet and the keyboard script

Pages are Jinja2 templates with autoescaping on: sample text (HTML, script tags) is text.
The Content-Security-Policy allows only this server's own script and style, so even a
template mistake could not run a sample's script.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from unified.review.queue import Filters
from unified.review.session import ReviewSession

HERE = Path(__file__).parent
CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'"


class TokenCheck(BaseHTTPMiddleware):
    """403 for a request whose ``token`` query parameter is not the server's."""

    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: Any) -> Response:
        given = request.query_params.get("token", "")
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("403: this review server needs the token of the URL it printed", status_code=403)
        response: Response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"  # the token is in the URL
        response.headers["Cache-Control"] = "no-store"
        return response


def _templates() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def _filters(params: Any) -> Filters:
    def one(key: str) -> str | None:
        v = str(params.get(key) or "").strip()
        return v or None

    verdict = one("verdict")
    return Filters(one("metric"), one("backend"), verdict if verdict in ("pass", "fail") else None)


class ReviewApp:
    """The routes over one ``ReviewSession``."""

    def __init__(self, session: ReviewSession, token: str) -> None:
        self.session = session
        self.token = token
        self.env = _templates()

    def url(self, path: str, filters: Filters, **extra: str) -> str:
        return f"{path}?{urlencode({**extra, **filters.query(), 'token': self.token})}"

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(s=self.session, token=self.token, url=self.url, **ctx)
        return HTMLResponse(html, status_code=status)

    async def index(self, request: Request) -> Response:
        filters = _filters(request.query_params)
        history = self.session.history()
        order, finished = self.session.order(filters, history)
        if finished < len(order):
            return RedirectResponse(self.url("/sample", filters, id=order[finished]), status_code=303)
        return self.page("done.html", filters=filters, total=len(order), agreement=self.session.agreement(history))

    async def sample(self, request: Request) -> Response:
        filters = _filters(request.query_params)
        sid = request.query_params.get("id", "")
        history = self.session.history()
        order, finished = self.session.order(filters, history)
        if sid not in order:
            return self.page("missing.html", status=404, filters=filters, sid=sid)
        return self.page(
            "sample.html",
            filters=filters,
            sid=sid,
            pos=self.session.position(sid, order, finished),
            screen=self.session.screen(sid, filters, history),
        )

    async def label(self, request: Request) -> Response:
        form = await request.form()
        filters = _filters(request.query_params)
        sid, metric = str(form.get("id", "")), str(form.get("metric", ""))
        try:
            value = float(str(form.get("value", "")))
            self.session.label(sid, metric, value, str(form.get("note") or ""))
        except ValueError as e:
            return PlainTextResponse(f"400: {e}", status_code=400)
        history = self.session.history()
        mine = self.session.my_labels(history)
        if any((sid, it.metric) not in mine for it in self.session.kept(filters).get(sid, ())):
            return RedirectResponse(self.url("/sample", filters, id=sid), status_code=303)
        return RedirectResponse(self.url("/", filters), status_code=303)

    async def skip(self, request: Request) -> Response:
        form = await request.form()
        try:
            self.session.skip(str(form.get("id", "")))
        except ValueError as e:
            return PlainTextResponse(f"400: {e}", status_code=400)
        return RedirectResponse(self.url("/", _filters(request.query_params)), status_code=303)

    async def agreement(self, request: Request) -> Response:
        filters = _filters(request.query_params)
        return self.page("agreement.html", filters=filters, agreement=self.session.agreement(self.session.history()))


def make_app(session: ReviewSession, token: str | None = None) -> tuple[Starlette, str]:
    """The Starlette app over ``session`` and its token (a fresh random one unless given)."""
    token = token or secrets.token_urlsafe(24)
    routes = ReviewApp(session, token)
    app = Starlette(
        routes=[
            Route("/", routes.index),
            Route("/sample", routes.sample),
            Route("/label", routes.label, methods=["POST"]),
            Route("/skip", routes.skip, methods=["POST"]),
            Route("/agreement", routes.agreement),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        middleware=[Middleware(TokenCheck, token=token)],
    )
    return app, token


__all__ = ["make_app"]
