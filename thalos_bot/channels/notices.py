"""Every sentence the bot says on its own behalf, in one place for review.

Channels render these texts as they are (plain text, no markup), so they read well in a
terminal and in Telegram alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta

from thalos_bot.domain.agents import AgentDefinition
from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import Info, ToolCallFinished, ToolCallStarted

COMMANDS: tuple[tuple[str, str], ...] = (
    ("new", "start a new session (optionally with another agent: /new <agent>)"),
    ("end", "end the current session"),
    ("status", "show the agent, session age, turns and tokens"),
    ("agents", "list the agents you can talk to"),
    ("cancel", "stop the answer being written"),
    ("help", "show this help"),
    ("link", "be the same person in another chat: /link gives a code, /link <code> uses it"),
    ("unlink", "undo /link <code> in this chat"),
    ("voice", "spoken answers here: /voice on, off or auto (to a voice note)"),
    ("budget", "today's spend against your limits (an admin: /budget lift NAME)"),
    ("remember", "keep a note for later: /remember TEXT (or /remember shared TEXT)"),
)
COMMAND_NAMES = tuple(name for name, _ in COMMANDS)
COMMAND_ARGUMENTS = {
    "new": ("agent", "the agent to talk to (optional)"),
    "link": ("code", "the code /link gave you in your other chat (none: get one)"),
    "voice": ("mode", "on, off or auto (none: say which it is)"),
    "budget": ("action", "lift NAME, an admin's (none: today's spend)"),
    "remember": ("text", "the note (shared TEXT: a note for everyone)"),
}
"""The commands that take an argument, each its argument's name and what it is (for a
platform whose commands declare their options, as Discord's slash commands do)."""


def _command_list() -> str:
    return ", ".join(f"/{name}" for name in COMMAND_NAMES)


def help_text(agent: AgentDefinition | None = None) -> str:
    lines = ["Just type to talk to the agent. Commands:"]
    lines += [f"/{name} — {summary}" for name, summary in COMMANDS]
    lines.append("In the terminal, /exit (or Ctrl-D) quits.")
    lines.append(
        "To send the agent text that starts with a command, begin with //: //new is sent as /new."
    )
    if agent is not None:
        lines.append(f"You are talking to {agent.name}.")
    return "\n".join(lines)


def voice_clip(part: int, parts: int) -> str:
    """The caption of the answer read aloud."""
    return "🔊 The answer, read aloud" + (f" ({part} of {parts})" if parts > 1 else "")


def speech_failed(reason: str) -> str:
    """Said once when an answer could not be read aloud (its text is there)."""
    return f"The answer could not be read aloud: {reason}"


def tool_image(tool: str, media_type: str, size: int) -> str:
    """The caption of a photo a tool made, and the console's line for it."""
    return f"🖼 Image from {tool} ({media_type}, {size:,} bytes)"


def unknown_command(word: str) -> str:
    return f"{word} is not a command I know. Commands: {_command_list()}."


def busy() -> str:
    return (
        "Still working on your previous message. Wait for the answer, or send /cancel to "
        "stop it. (This message was not sent to the agent.)"
    )


def busy_command(command: str) -> str:
    return f"/{command} can't run while an answer is being written. Send /cancel first."


def idle_rollover(idle_for: timedelta, agent: AgentDefinition) -> str:
    return (
        f"Your last session was idle for {format_duration(idle_for)}, so it has ended. "
        f"Starting a new session with {agent.name}."
    )


def dead_session() -> str:
    return (
        "That session is no longer available (it may have been ended or removed). "
        "Your message was not sent. Please send it again to start a new session."
    )


def new_session(agent: AgentDefinition) -> str:
    return f"New session with {agent.name}. {agent.description}".rstrip()


def unknown_agent(name: str, agents: Iterable[AgentDefinition]) -> str:
    listing = ", ".join(a.id for a in agents)
    return f"There is no agent called {name!r}. Agents: {listing}. Use /new <agent>."


def session_ended() -> str:
    return "Session ended. Send a message to start a new one."


def no_session() -> str:
    return "There is no session right now. Send a message to start one."


def nothing_to_cancel() -> str:
    return "Nothing is running, so there is nothing to cancel."


def agents_list(agents: Iterable[AgentDefinition], current: str | None, default: str) -> str:
    lines = ["Agents (use /new <agent> to switch):"]
    for agent in agents:
        marks = []
        if agent.id == current:
            marks.append("current")
        if agent.id == default:
            marks.append("default")
        suffix = f" ({', '.join(marks)})" if marks else ""
        description = f" — {agent.description}" if agent.description else ""
        lines.append(f"• {agent.id}: {agent.name}{suffix}{description}")
    return "\n".join(lines)


UNKNOWN_WINDOW = (
    "the model's context window is unknown (its server does not say), so the conversation "
    "is compacted when the server refuses it as too long"
)


def status(
    agent: AgentDefinition,
    age: timedelta,
    turns: int,
    input_tokens: int,
    output_tokens: int,
    *,
    busy: bool,
    tools: Iterable[str] = (),
    context: tuple[int, int] | None = None,
    spending: Iterable[str] = (),
    schedules: str | None = None,
) -> str:
    """``context`` is (prompt tokens of the last model call, context window);
    ``spending`` the lines of :func:`spending`."""
    state = "writing an answer" if busy else "idle"
    lines = [
        f"Agent: {agent.name} ({agent.id})",
        f"Session age: {format_duration(age)}",
        f"Turns: {turns}",
        f"Tokens: {input_tokens:,} in, {output_tokens:,} out",
    ]
    if context is not None and context[1] > 0:
        used, window = context
        lines.append(f"Context: {round(100 * used / window)}% of {format_tokens(window)}")
    elif context is not None:
        lines.append(f"Context: {context[0]:,} tokens; {UNKNOWN_WINDOW}")
    lines.extend(spending)
    lines.append(f"State: {state}")
    return "\n".join(lines + _tool_lines(tools) + _schedule_lines(schedules))


def spending(
    session_tokens: int,
    session_cost: float | None,
    today_tokens: int,
    today_cost: float,
    timezone: str,
    *,
    daily_tokens: int | None = None,
    daily_cost: float | None = None,
    month: tuple[int, float] | None = None,
    monthly_tokens: int | None = None,
    monthly_cost: float | None = None,
) -> list[str]:
    """The /status lines: what this session and today (in ``timezone``) have spent, today
    against the person's daily limits when they have any; and this month's ``month``
    (tokens, cost) against the monthly limits, when one applies."""
    cost = "cost unknown (no price for its model)" if session_cost is None else _usd(session_cost)
    lines = [
        f"Spent this session: {session_tokens:,} tokens, {cost}",
        f"Spent today ({timezone}): "
        + _against(today_tokens, today_cost, daily_tokens, daily_cost),
    ]
    if month is not None:
        lines.append("Spent this month: " + _against(*month, monthly_tokens, monthly_cost))
    return lines


def _against(tokens: int, cost: float, token_limit: int | None, cost_limit: float | None) -> str:
    shown = f"{tokens:,}" + ("" if token_limit is None else f" of {token_limit:,}")
    dollars = _usd(cost) + ("" if cost_limit is None else f" of ${cost_limit:,.2f}")
    return f"{shown} tokens, {dollars}"


def _usd(amount: float) -> str:
    if amount == 0:
        return "$0.00"
    return f"about ${amount:,.2f}" if amount >= 0.01 else "under $0.01"


def format_tokens(count: int) -> str:
    """200000 → "200k", 1000000 → "1M", 1500 → "1.5k"."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:g}M"
    if count >= 1_000:
        return f"{count / 1_000:g}k"
    return str(count)


def context_dropped(turns: int) -> str:
    """Said once when early turns no longer fit and could not be summarized."""
    plural = "turn" if turns == 1 else "turns"
    return (
        f"This conversation got too long for the model, so its earliest {turns} {plural} "
        "were left out (a summary of them could not be made). It goes on from there."
    )


def from_info(event: Info) -> str | None:
    """The notice an :class:`Info` event asks for, if any (most are for logs only)."""
    if event.name in ("limit-reached", "budget-alert"):
        notice = event.data.get("notice")
        word = "limit" if event.name == "limit-reached" else "budget"
        return f"[{word}] {notice}" if isinstance(notice, str) else None
    if event.name == "context-dropped":
        turns = event.data.get("turns", 0)
        return context_dropped(turns if isinstance(turns, int) else 0)
    if event.name == "model-fallback":
        return model_fallback(str(event.data.get("model")), str(event.data.get("failed")))
    return None


def model_fallback(model: str, failed: str) -> str:
    """Said when the agent's first provider could not answer and another one did."""
    return f"[fallback] {failed} could not answer; {model} is answering instead."


def approval_wait(tools: Sequence[str]) -> str:
    """The ``/status`` line of a turn waiting for the user's approval ("" when none)."""
    if not tools:
        return ""
    return f"\nWaiting for your approval of {', '.join(tools)}"


def status_unbound(
    default: AgentDefinition, tools: Iterable[str] = (), *, schedules: str | None = None
) -> str:
    lines = [f"No session yet. Send a message to start one with {default.name}."]
    return "\n".join(lines + _tool_lines(tools) + _schedule_lines(schedules))


def _schedule_lines(schedules: str | None) -> list[str]:
    """The pending-schedules line, made by the schedules package."""
    return [schedules] if schedules else []


def _tool_lines(tools: Iterable[str]) -> list[str]:
    listed = list(tools)
    return [f"Tools: {'; '.join(listed)}"] if listed else []


def turn_failed(error: AgentError) -> str:
    """The line shown after a failed turn (after any partial text)."""
    if error.code is ErrorCode.CANCELLED:
        return "[cancelled]"
    if error.code is ErrorCode.PROVIDER_ERROR:
        return f"[error] {error.detail}"
    if error.code is ErrorCode.LIMIT_REACHED:
        return f"[limit] {error.detail}"
    return f"[error] {error.detail}"


def no_answer() -> str:
    """Shown once after a turn that completed without any text."""
    return "The model returned no answer."


def tool_activity(event: ToolCallStarted | ToolCallFinished) -> str:
    if isinstance(event, ToolCallStarted):
        return f"⚙ {event.name} …"
    marks = {"ok": "✓", "error": "✗", "refused": "⛔", "cancelled": "✗"}
    return (
        f"{marks.get(event.outcome, '?')} {event.name} ({event.duration_s:.1f}s, {event.outcome})"
    )


def interrupted_by_restart() -> str:
    """To a conversation whose turn a kill cut short (told by the next start)."""
    return (
        "The bot stopped unexpectedly while answering your last message, and that "
        "answer was lost. Please send it again."
    )


def shutting_down() -> str:
    return "The bot is restarting; this answer was cut short. Please ask again in a moment."


def only_text() -> str:
    return (
        "I can read text, photos and images, PDF and text files, and voice notes; "
        "not this kind of message."
    )


def empty_message() -> str:
    return "That message is empty."


def format_duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds}s" if seconds else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"
