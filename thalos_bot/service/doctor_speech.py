"""``doctor``'s line for ``[speech]``: the local engine's programs are on the PATH, or the
endpoint is named. Its key, when it has one, is checked with the other variables."""

from __future__ import annotations

from thalos_bot.channels.checks import Check
from thalos_bot.config.loader import LoadedConfig
from thalos_bot.speech.local import install_line, missing_programs

NAME = "speech engine"


def speech_env(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """The variable holding the speech endpoint's key, and who needs it."""
    speech = loaded.settings.speech
    endpoint = speech.openai if speech.enabled and speech.kind == "openai" else None
    if endpoint is not None and endpoint.api_key_env:
        return [(endpoint.api_key_env, "[speech]")]
    return []


def speech_checks(loaded: LoadedConfig) -> list[Check]:
    speech = loaded.settings.speech
    if not speech.enabled:
        return []
    if speech.kind == "openai" and speech.openai is not None:
        endpoint = speech.openai
        return [
            Check(
                NAME,
                "ok",
                f"{endpoint.base_url}/audio/speech ({endpoint.model}, voice {endpoint.voice}, "
                f"{endpoint.format})",
            )
        ]
    missing = missing_programs()
    if missing:
        return [
            Check(
                NAME,
                "fail",
                f"{' and '.join(missing)} not found on the PATH (needed by [speech] with the "
                "local engine)",
                f"install {'them' if len(missing) > 1 else 'it'}: sudo {install_line(missing)} "
                '(or set [speech] enabled = false, or kind = "openai")',
            )
        ]
    return [Check(NAME, "ok", f"espeak-ng (voice {speech.local.voice}) and ffmpeg found")]
