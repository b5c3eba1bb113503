"""The guard corpus: known injections that must trip, ordinary results that must not.

Fake secrets are assembled here at run time from pieces, so no committed file holds a
string a secret scanner (or a reader) would take for a real credential.
"""

from __future__ import annotations

from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"


def injections() -> list[str]:
    lines = (CORPUS / "injections.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def ordinary() -> list[Path]:
    return sorted((CORPUS / "ordinary").iterdir())


def fake_secrets() -> dict[str, tuple[str, str]]:
    """rule name → (a text holding a made-up secret of that kind, the secret itself)."""
    key = "\n".join(["MIIEow" + "Q" * 58] * 3)
    aws = "AKIA" + "Z7Q2" * 4
    telegram = "7012345678" + ":AA" + "x9Y8w7V6u5T4s3R2q1P0o9N8m7L6k5J4i"
    anthropic = "sk-" + "ant-api03-" + "Fake0Key1For2Tests3Only4"
    github = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" + "k1L2m3N4o5P6q7R8"
    begin, end = "-----BEGIN RSA PRIVATE " + "KEY-----", "-----END RSA PRIVATE " + "KEY-----"
    return {
        "private-key": (f"here is the key:\n{begin}\n{key}\n{end}\nthanks", key),
        "aws-access-key": (f"aws_access_key_id = {aws}\nregion = eu-west-1", aws),
        "telegram-bot-token": (f"TOKEN={telegram}", telegram),
        "anthropic-key": (f"ANTHROPIC_API_KEY={anthropic} # prod", anthropic),
        "github-token": (f"remote: https://{github}@github.com/o/r.git", github),
    }
