"""Connections to flowsyncd, with TLS from the standard `ssl` module (issue #32).

    sock = open_connection("sync.example.com", 7400)                  # TLS: not loopback
    sock = open_connection("127.0.0.1", port)                         # plain TCP: loopback
    sock = open_connection(host, port, cafile="ca.pem")               # a private CA, too
    sock = open_connection(host, port, pins=["AB:CD:..."], system_trust=False)   # self-signed, pinned

The same rules as the Swift SDK's TLSPolicy (docs/SDK.md, "Transports and TLS"):
TLS by default for every host that is not loopback (decided on the text of the host,
never by resolving it); at least TLS 1.2; the server name checked against the
certificate (and sent as SNI); ALPN "flowsync"; optional SHA-256 pins of the
certificate's DER bytes (as `openssl x509 -noout -fingerprint -sha256` prints them).
A pin is compared with the server's *leaf* certificate: Python before 3.13 does not
expose the rest of the verified chain (the Swift SDK accepts a pinned intermediate too).
"""

import hashlib
import ipaddress
import socket
import ssl


class TLSRefused(Exception):
    """The server's certificate was refused (by a pin), or it spoke no TLS."""


def is_loopback(host):
    """localhost, *.localhost, 127.0.0.0/8, ::1 (any spelling): on the text, not resolved."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name.split("%", 1)[0]
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback


def parse_pin(text):
    """A SHA-256 pin from its hex form (64 digits, ':' allowed between bytes)."""
    digits = text.replace(":", "")
    if len(digits) != 64:
        raise ValueError("a SHA-256 pin has 64 hex digits: %r" % text)
    return bytes.fromhex(digits)


def client_context(cafile=None, system_trust=True, certfile=None, keyfile=None, minimum_version="1.2"):
    """An SSLContext with the SDK's defaults: TLS 1.2+, ALPN flowsync, the host name checked."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED
    context.minimum_version = ssl.TLSVersion.TLSv1_3 if minimum_version == "1.3" else ssl.TLSVersion.TLSv1_2
    if system_trust:
        context.load_default_certs()
    if cafile:
        context.load_verify_locations(cafile)
    if not system_trust and not cafile:
        # Trust comes from the pins alone (checked after the handshake).
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["flowsync"])
    if certfile:
        context.load_cert_chain(certfile, keyfile)
    return context


def open_connection(host, port, tls=None, cafile=None, system_trust=True, server_name=None, pins=(),
                    certfile=None, keyfile=None, timeout=10):
    """A connected socket (ssl.SSLSocket under TLS). `tls`: True, False, or None for the
    default (TLS unless `host` is loopback). Raises ssl.SSLError (untrusted, expired, wrong
    name, protocol version) or TLSRefused (pin mismatch) before anything is sent."""
    use_tls = (not is_loopback(host)) if tls is None else tls
    sock = socket.create_connection((host.strip("[]"), port), timeout=timeout)
    if not use_tls:
        return sock
    if not system_trust and not cafile and not pins:
        sock.close()
        raise TLSRefused("no trust: give cafile, system_trust, or pins")
    context = client_context(cafile=cafile, system_trust=system_trust, certfile=certfile, keyfile=keyfile)
    try:
        tls_sock = context.wrap_socket(sock, server_hostname=server_name or host.strip("[]"))
    except Exception:
        sock.close()
        raise
    if pins:
        wanted = {parse_pin(p) if isinstance(p, str) else bytes(p) for p in pins}
        leaf = hashlib.sha256(tls_sock.getpeercert(binary_form=True)).digest()
        if leaf not in wanted:
            tls_sock.close()
            raise TLSRefused("the server's certificate matches no pin (its SHA-256 is %s)" % leaf.hex())
    protocol = tls_sock.selected_alpn_protocol()
    if protocol not in (None, "flowsync"):
        tls_sock.close()
        raise TLSRefused("the server agreed to ALPN %r, not flowsync" % protocol)
    return tls_sock


def add_arguments(parser):
    """The TLS options of the example tools (watch.py, live_check.py)."""
    group = parser.add_argument_group("TLS (default: on unless the host is loopback)")
    mode = group.add_mutually_exclusive_group()
    mode.add_argument("--tls", dest="tls", action="store_true", default=None, help="use TLS even on loopback")
    mode.add_argument("--plaintext", dest="tls", action="store_false", help="plain TCP even beyond loopback")
    group.add_argument("--cafile", help="PEM file of CAs to trust in addition to the system's")
    group.add_argument("--no-system-trust", dest="system_trust", action="store_false",
                       help="do not use the system's trust store (with --cafile or --pin)")
    group.add_argument("--server-name", help="name checked against the certificate (default: the host)")
    group.add_argument("--pin", action="append", default=[], help="SHA-256 of an accepted certificate (repeatable)")
    group.add_argument("--cert", help="client certificate (PEM) for mTLS")
    group.add_argument("--key", help="its private key (PEM)")


def connect_from_arguments(args, host, port, timeout=10):
    return open_connection(host, port, tls=args.tls, cafile=args.cafile, system_trust=args.system_trust,
                           server_name=args.server_name, pins=args.pin, certfile=args.cert, keyfile=args.key,
                           timeout=timeout)
