"""Chat templates that exported datasets are checked against (and that tiny offline tokenizers can use).

`QWEN_TOOL_TEMPLATE` is a ChatML template in the style of Qwen2.5/Qwen3 with tool support, written
for qaflow (not copied from a model repo):

- tools go into the system prompt as one JSON object per line inside `<tools>...</tools>`;
- an assistant turn renders `reasoning_content` as `<think>...</think>`, then its content, then each
  tool call as `<tool_call>{"name": ..., "arguments": ...}</tool_call>` (arguments may be a JSON
  string, as in the OpenAI format and in exported datasets, or a mapping);
- consecutive tool results are rendered in one user turn, each inside `<tool_response>...</tool_response>`;
- every assistant turn keeps its reasoning (Qwen3's own template drops it from turns before the last
  user message; for multi-turn agent SFT the reasoning of every turn is training signal);
- assistant turns are wrapped in `{% generation %}` markers, so TRL's `assistant_only_loss` and
  `return_assistant_tokens_mask` work with it.

Keys that are absent or null (exported rows carry every key, null where unused) render as nothing.
"""

from __future__ import annotations

QWEN_TOOL_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages and messages[0].role == 'system' and messages[0].content %}"
    "{{- messages[0].content + '\\n\\n' }}"
    "{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n'"
    " + 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}"
    "{{- '\\n' + (tool | tojson) }}"
    "{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments'"
    " + ' within <tool_call></tool_call> XML tags:\\n<tool_call>\\n'"
    ' + \'{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- elif messages and messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + (messages[0].content or '') + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}"
    "{%- elif message.role == 'user' or message.role == 'system' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}"
    "{%- if message.reasoning_content %}"
    "{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{{- message.content or '' }}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{%- set fn = tool_call.function if tool_call.function else tool_call %}"
    "{%- if not loop.first or message.content %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": ' + (fn.name | tojson) + ', \"arguments\": ' }}"
    "{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>' }}"
    "{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + (message.content or '') + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""ChatML with tools in the system prompt, `<tool_call>`/`<tool_response>` blocks and `<think>` reasoning."""
