"""The LLM layer: one wrapper over litellm for every LLM step (repair, audit agent, review).

- `LLMConfig` names the model (any litellm provider) and how to call it; `script=` swaps in canned
  replies that still run through litellm's mock path.
- `LLM.complete` (one turn, tools optional), `LLM.structured` (validated pydantic output with re-asks),
  `parse_tool_calls` (validated tool calls; `ToolCallError` text goes back to the model).
- `UsageAccount` totals tokens and cost per model; `cache_dir` makes reruns reproducible.

Importing this package does not import litellm.
"""

from qaflow.errors import LLMError, ToolCallError
from qaflow.llm.account import ModelTotals, UsageAccount
from qaflow.llm.client import LLM, assistant_message
from qaflow.llm.config import LLMConfig, ScriptedReply, ScriptedToolCall
from qaflow.llm.reply import LLMReply, Usage
from qaflow.llm.structured import extract_json
from qaflow.llm.tools import ToolCall, parse_tool_call, parse_tool_calls

__all__ = [
    "LLM",
    "LLMConfig",
    "LLMError",
    "LLMReply",
    "ModelTotals",
    "ScriptedReply",
    "ScriptedToolCall",
    "ToolCall",
    "ToolCallError",
    "Usage",
    "UsageAccount",
    "assistant_message",
    "extract_json",
    "parse_tool_call",
    "parse_tool_calls",
]
