"""A real local HTTP server speaking the OpenAI-compatible ``/v1/chat/completions`` API: the stand-in
for a paid LLM endpoint in tests (each test decides what it answers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], tuple[int, Any]]


class ChatServer:
    """A real HTTP server speaking /v1/chat/completions; the test decides what it answers."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.respond: Responder = lambda body: (200, {"action": "ignore", "reason": "default"})
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("authorization")})
                status, reply = outer.respond(body)
                if status == 200:
                    content = reply if isinstance(reply, str) else json.dumps(reply)
                    payload = json.dumps(
                        {
                            "id": "x",
                            "object": "chat.completion",
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    )
                else:
                    payload = json.dumps({"error": {"message": "nope"}})
                data = payload.encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if status == 429:
                    self.send_header("retry-after", "2")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
