"""Serve a directory read-only over HTTP, or over HTTPS with a given certificate and key."""

from __future__ import annotations

import argparse
import functools
import http.server
import socket
import ssl


class Handler(http.server.SimpleHTTPRequestHandler):
    """A file handler that drops clients silent for a minute (and, with TLS, does the handshake in its own thread)."""

    timeout = 60


class Server(http.server.ThreadingHTTPServer):
    """A threading server that ends TLS connections with close_notify (OpenSSL 3 clients such as apt 3 require it)."""

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        if isinstance(request, ssl.SSLSocket):
            try:
                request.settimeout(5)
                request.unwrap()
            except (OSError, ValueError):
                pass
        super().shutdown_request(request)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--tls-cert", help="PEM certificate chain; serve HTTPS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = parser.parse_args()
    handler = functools.partial(Handler, directory=args.directory)
    if ":" in args.bind:
        Server.address_family = socket.AF_INET6
    server = Server((args.bind, args.port), handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
