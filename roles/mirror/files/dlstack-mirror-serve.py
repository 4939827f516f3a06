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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bind", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--directory", required=True)
    parser.add_argument("--tls-cert", help="PEM certificate chain; serve HTTPS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    args = parser.parse_args()
    handler = functools.partial(Handler, directory=args.directory)
    server_class = type("Server", (http.server.ThreadingHTTPServer,), {})
    if ":" in args.bind:
        server_class.address_family = socket.AF_INET6
    server = server_class((args.bind, args.port), handler)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(args.tls_cert, args.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.serve_forever()


if __name__ == "__main__":
    main()
