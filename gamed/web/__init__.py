"""The web side of gamed: the JSON API, server-sent event streams of live tables, and the static
pages (``static/``) that draw them in a browser. Served by twisted.web; see docs/web-api.md."""
