"""What tests read back from an HTML report."""

from __future__ import annotations

import base64
import gzip
import json
import re


def page_samples(text: str) -> dict:
    """The sample browser's data as the page packs it (gzip-compressed JSON, base64)."""
    packed = re.search(r'<script type="application/octet-stream" id="sample-data"[^>]*>(.*?)'
                       r"</script>", text, re.S).group(1)
    return json.loads(gzip.decompress(base64.b64decode(packed)))
