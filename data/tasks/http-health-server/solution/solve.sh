#!/usr/bin/env bash
set -euo pipefail
cd /app

cat > /app/server.py <<'EOF'
import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/health":
            return self.reply(200, {"status": "ok"})
        if url.path == "/sum":
            q = parse_qs(url.query)
            try:
                return self.reply(200, {"result": int(q["a"][0]) + int(q["b"][0])})
            except (KeyError, ValueError):
                return self.reply(400, {"error": "a and b must be integers"})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        if urlparse(self.path).path != "/echo":
            return self.reply(404, {"error": "not found"})
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            value = json.loads(raw)
        except ValueError:
            return self.reply(400, {"error": "body is not valid JSON"})
        self.reply(200, value)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()
EOF
