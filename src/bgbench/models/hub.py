"""Whether a download can start at all, asked once and quickly, before a hub client's retry loop.

huggingface_hub retries a failed request with back-off (1, 2, 4, 8, 8 s, for each file name it
tries), so a hub name without its weights in the cache took over a minute offline before its
one-line error. A download needs the hub's host to resolve and accept a connection; when
`HF_HUB_OFFLINE` is set, or the host does not answer within a few seconds, the caller fails at
once with its own message instead of starting that loop. Nothing here downloads anything.
"""
from __future__ import annotations

import os
import socket
import threading
import urllib.request
from typing import Optional
from urllib.parse import urlparse

#: How long the host may take to resolve and accept a TCP connection (seconds).
TIMEOUT_S = 3.0


def offline_reason(url: Optional[str] = None, timeout: float = TIMEOUT_S) -> Optional[str]:
    """Why a download from `url` (default: the Hugging Face endpoint) cannot start, in a few words
    ('HF_HUB_OFFLINE is set', 'huggingface.co does not resolve: ...'), or None when its host
    accepts a connection. Resolution and connection run in a thread bounded by `timeout`, since a
    resolver without network can itself wait far longer."""
    from huggingface_hub import constants
    if constants.is_offline_mode():
        return "HF_HUB_OFFLINE is set"
    # the Hugging Face endpoint the hub client asks: its HF_ENDPOINT setting, else huggingface.co
    endpoint = getattr(constants, "ENDPOINT", None) or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parsed = urlparse(url or endpoint)
    # the proxy the request goes through (the environment's, as requests reads it; none when NO_PROXY names the host)
    proxies = {} if urllib.request.proxy_bypass(parsed.hostname or "") else urllib.request.getproxies()
    proxy = proxies.get(parsed.scheme) or proxies.get("all")
    if proxy:  # the client connects to the proxy, which reaches the hub: the proxy must answer
        parsed = urlparse(proxy if "://" in proxy else f"http://{proxy}")
    host = parsed.hostname
    if not host:
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    outcome: dict = {}

    def attempt():
        try:
            with socket.create_connection((host, port), timeout=timeout):
                outcome["ok"] = True
        except OSError as e:
            outcome["error"] = " ".join(str(e).split()) or type(e).__name__

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    if outcome.get("ok"):
        return None
    if "error" in outcome:
        return f"{host} cannot be reached: {outcome['error']}"
    return f"{host} did not answer within {timeout:g} s"
