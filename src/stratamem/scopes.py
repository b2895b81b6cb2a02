"""Scope names of the other memory APIs stratamem stands in for, mapped onto its layers.

One table, read by the layer parser (layer names) and by ``LayerIdentifiers`` (identifier keys), so
every surface (SDK, REST, MCP, CLI) accepts the same names. Kept free of imports so the data model
can use it.

==============  ================  ==========================================
scope name      identifier key    stratamem layer / identifier
==============  ================  ==========================================
``workspace``   ``workspaceId``   ``project`` / ``projectId``
``global``      (none)            ``company`` / ``companyId``
``user``        ``userId``        ``user`` / ``userId``
``session``     ``sessionId``     ``session`` / ``userId`` + ``sessionId``
``agent``       ``agentId``       ``agent`` / ``agentId`` + ``userId``
``org``         ``orgId``         ``org`` / ``orgId``
``object``      ``objectId``,     ``object`` / ``objectType`` + ``objectId``
                ``objectType``
==============  ================  ==========================================
"""

from __future__ import annotations

#: Scope names that are not layer names, lower case, to the layer they mean.
LAYER_ALIASES: dict[str, str] = {"workspace": "project", "global": "company"}

#: Identifier keys that are not stratamem's, to the ``LayerIdentifiers`` field they fill.
IDENTIFIER_ALIASES: dict[str, str] = {"workspaceId": "project_id", "workspace_id": "project_id"}
