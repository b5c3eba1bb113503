"""JSON as a platform might send it, wrong in any way: the strategies the transports'
decoding fuzzers share."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


def shaped(required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    """An object with these keys, each value its strategy or any JSON; or any JSON."""

    def either(strategy: Any) -> Any:
        return strategy | json_values

    return (
        st.fixed_dictionaries(
            {k: either(v) for k, v in required.items()},
            optional={k: either(v) for k, v in (optional or {}).items()},
        )
        | json_values
    )
