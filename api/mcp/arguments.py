"""Tool arguments: one naming convention, unknown arguments refused by name, and errors an agent can act on.

- Every tool's arguments are snake_case in its input schema (tools/list), like the REST API's. The camelCase spelling
  of each multi-word argument is accepted too (pydantic's `validation_alias=AliasChoices(snake, camel)`, added here
  to every tool, so a new tool cannot forget it), and clients written against the earlier names (expectedVersion,
  entityId, includeInvalid, batchId) keep working.
- An argument the tool does not have is refused by name, with the nearest one (pydantic's `extra="forbid"`; the
  schema says `additionalProperties: false`). Before, `asOf` on a tool without it was dropped and the answer
  silently ignored it.
- The SDK validates a call's arguments in one place, `Tool.run`, and reports a failure as a ToolError carrying
  pydantic's dump. `AtriumTool` keeps that place and only rewrites the message (api/mcp/text/arguments.py).

These are the SDK's own extension points (`Tool` subclassed, a `FuncMetadata` with the same fields, tools handed to
`MCPServer(tools=...)`), not a second validator beside it: what tools/list shows is what is validated.
"""

from __future__ import annotations

import copy
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from pydantic import AliasChoices, ConfigDict, ValidationError, create_model
from pydantic.alias_generators import to_camel

from api.mcp import text
from api.mcp.registry import ToolSpec
from api.mcp.schemas import snake_or_camel
from memory.text import seal_text


class StrictArguments(ArgModelBase):
    """A tool's arguments: unknown ones are an error, not ignored."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")


def conventional(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """The SDK's argument model for a tool, strict, with each multi-word argument also accepted in camelCase."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        info = copy.copy(info)
        if to_camel(name) != name and info.alias is None and info.validation_alias is None:
            info.validation_alias = snake_or_camel(name)
        fields[name] = (info.annotation, info)
    return create_model(model.__name__, __base__=StrictArguments, **fields)


class Arguments(FuncMetadata):
    """The SDK's argument handling, with the JSON pre-parsing it does for an argument sent as a JSON string (some
    clients send lists so) also for the camelCase spelling: the SDK looks up only field names and `alias`."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        spelled: dict[str, str] = {}
        for name, info in self.arg_model.model_fields.items():
            alias = info.validation_alias
            for choice in alias.choices if isinstance(alias, AliasChoices) else ():
                if isinstance(choice, str):
                    spelled[choice] = name
        sent = {spelled.get(key, key): key for key in data}
        if len(sent) != len(data):  # both spellings of one argument: let validation report it
            return super().pre_parse_json(data)
        parsed = super().pre_parse_json({name: data[key] for name, key in sent.items()})
        return {sent[name]: value for name, value in parsed.items()}


class AtriumTool(Tool):
    """A tool whose argument errors are one line per problem, naming the argument and what to send."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except ToolError as exc:
            # Tool.run raises a plain ToolError caused by the ValidationError only for arguments that failed the
            # input schema; a tool's own errors are caused by a ToolError, a crash is an UnexpectedToolError.
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            message = text.argument_errors(self.name, self.parameters, exc.__cause__)
            raise ToolError(seal_text(message)) from exc.__cause__


def tool_from_spec(spec: ToolSpec) -> Tool:
    """The SDK tool for a declared tool (api/mcp/registry.py), with the argument convention above."""
    tool = AtriumTool.from_function(spec.fn, name=spec.name, title=spec.title, annotations=spec.annotations)
    model = conventional(tool.fn_metadata.arg_model)
    meta = tool.fn_metadata
    tool.fn_metadata = Arguments(
        arg_model=model, output_schema=meta.output_schema, output_model=meta.output_model, wrap_output=meta.wrap_output
    )
    tool.parameters = model.model_json_schema(by_alias=True)
    return tool
