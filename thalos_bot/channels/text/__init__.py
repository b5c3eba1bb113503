"""Text as transports carry it: its length (:mod:`.measure`), code fences found line by
line (:mod:`.fences`), and splitting long Markdown at a transport's limit
(:mod:`.split`), closing at each cut what is open there and reopening it in the next
part (:mod:`.carry`)."""
