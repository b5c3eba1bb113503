"""The model's Markdown, rendered into a transport's dialect.

One CommonMark walk (markdown-it-py, with GitHub's tables and strikethrough) is shared
by every transport: :mod:`.parse` cuts the text into cacheable pieces, :mod:`.walk`
walks the blocks, :mod:`.inline` a paragraph's inline run, :mod:`.tables` a table.
What the walk writes is the transport's: a :class:`~.dialect.Dialect` says how bold,
a link, a code block, a quote look (:mod:`.html` is the emitter for HTML dialects:
Telegram's subset, Matrix's ``formatted_body``). :class:`~.render.Renderer` puts them
together with the promises every dialect keeps: markup in the answer is shown as text,
a marker without its partner stays literal, the shown text is never longer than the
Markdown (the splitter counts on it), and time grows linearly with the input.
"""
