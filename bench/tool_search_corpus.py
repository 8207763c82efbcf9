"""The benchmark's tools and hold-out queries for tool search (``bench_tool_search``).

``generated_tools(n)`` makes ``n`` plausible MCP-style tools: services × objects × actions, each with a
one-sentence description and parameter names, deterministic. ``HOLDOUT`` is 50 queries written the way a
model asks (keywords and short phrases), each naming the one tool it means: 25 against the tools of the
MCP servers the tests run (``mcp-server-time``, ``@modelcontextprotocol/server-everything``), 25 against
generated tools. They were written before the ranking was measured and are not tuned to it.
"""

from __future__ import annotations

import itertools
from typing import Any

SERVICES = {
    "github": ("issue", "pull request", "repository", "branch", "commit", "release", "workflow run", "gist"),
    "gitlab": ("merge request", "pipeline", "project", "issue", "runner", "snippet", "tag", "milestone"),
    "slack": ("message", "channel", "reaction", "user profile", "reminder", "file upload", "thread", "emoji"),
    "gmail": ("email", "draft", "label", "attachment", "filter", "thread", "contact", "signature"),
    "jira": ("ticket", "sprint", "board", "epic", "comment", "worklog", "component", "version"),
    "notion": ("page", "database", "block", "comment", "workspace member", "template", "property", "view"),
    "linear": ("issue", "cycle", "team", "project update", "label", "roadmap", "triage item", "estimate"),
    "stripe": ("customer", "invoice", "payment intent", "subscription", "refund", "coupon", "payout", "price"),
    "postgres": ("table", "index", "query plan", "schema", "role", "extension", "vacuum job", "replication slot"),
    "s3": ("bucket", "object", "presigned url", "lifecycle rule", "bucket policy", "multipart upload", "tag", "version"),
    "calendar": ("event", "calendar", "attendee", "free busy slot", "reminder", "room booking", "recurrence", "invite"),
    "drive": ("file", "folder", "permission", "revision", "shared drive", "shortcut", "comment", "export"),
    "dropbox": ("file", "folder", "shared link", "paper doc", "team member", "file request", "revision", "tag"),
    "twilio": ("sms", "phone call", "phone number", "voice recording", "conversation", "verification", "fax", "queue"),
    "zoom": ("meeting", "webinar", "recording", "participant", "breakout room", "poll", "chat message", "registrant"),
    "figma": ("design file", "frame", "component", "style", "comment", "version history", "team project", "prototype"),
    "sentry": ("error event", "issue", "release", "alert rule", "project", "performance trace", "team", "dsn key"),
    "datadog": ("metric", "monitor", "dashboard", "log query", "incident", "slo", "synthetic test", "host tag"),
    "kubernetes": ("pod", "deployment", "service", "config map", "secret", "namespace", "cron job", "node"),
    "docker": ("container", "image", "volume", "network", "compose stack", "registry login", "build cache", "exec session"),
    "weather": ("forecast", "current conditions", "air quality", "severe alert", "radar map", "historical record",
                "uv index", "pollen count"),
    "maps": ("route", "place", "geocode", "distance matrix", "elevation", "timezone lookup", "street view", "traffic"),
    "spotify": ("playlist", "track", "album", "artist", "podcast episode", "queue", "device", "recommendation"),
    "shopify": ("product", "order", "customer", "inventory level", "discount code", "fulfillment", "collection", "theme"),
    "hubspot": ("contact", "deal", "company", "ticket", "email campaign", "form", "pipeline stage", "note"),
    "salesforce": ("lead", "opportunity", "account", "case", "report", "dashboard", "campaign", "quote"),
    "zendesk": ("support ticket", "macro", "agent", "satisfaction rating", "article", "trigger", "view", "group"),
    "confluence": ("space", "page", "blog post", "attachment", "comment", "label", "template", "page tree"),
    "trello": ("card", "board", "list", "checklist", "member", "label", "power up", "attachment"),
    "asana": ("task", "project", "section", "portfolio", "goal", "tag", "story", "custom field"),
    "airtable": ("base", "table", "record", "field", "view", "automation", "comment", "webhook"),
    "openai": ("completion", "embedding", "fine tuning job", "file", "moderation", "image generation", "assistant",
               "vector store"),
    "huggingface": ("model card", "dataset", "space", "inference endpoint", "discussion", "collection", "tokenizer",
                    "model download"),
    "arxiv": ("paper", "author", "category listing", "abstract", "citation", "pdf download", "new submission", "version"),
    "wikipedia": ("article", "summary", "page revision", "category", "random page", "language link", "infobox",
                  "search result"),
    "youtube": ("video", "channel", "playlist", "comment", "caption track", "live stream", "subscription", "thumbnail"),
    "reddit": ("post", "subreddit", "comment", "user karma", "flair", "moderation queue", "saved item", "award"),
    "twitter": ("tweet", "timeline", "follower", "direct message", "list", "bookmark", "space", "trend"),
    "pdf": ("page text", "form field", "annotation", "table extraction", "merge", "split", "watermark", "metadata"),
    "image": ("thumbnail", "resize", "crop", "format conversion", "exif data", "color palette", "background removal",
              "ocr text"),
    "sqlite": ("table", "row", "index", "query", "schema", "backup", "pragma", "view"),
    "redis": ("key", "hash", "list", "stream", "pub sub channel", "cache entry", "sorted set", "ttl"),
    "elasticsearch": ("index", "document", "mapping", "search query", "alias", "snapshot", "ingest pipeline", "shard"),
    "filesystem": ("directory listing", "file content", "file metadata", "symlink", "disk usage", "file search",
                   "temp file", "permission"),
    "browser": ("page screenshot", "page content", "link", "form input", "cookie", "tab", "download", "console log"),
    "translate": ("text translation", "language detection", "glossary", "document translation",
                  "supported language", "transliteration", "dictionary entry", "pronunciation"),
    "finance": ("stock quote", "exchange rate", "market news", "earnings report", "crypto price", "dividend",
                "option chain", "portfolio"),
    "news": ("headline", "article", "source", "topic feed", "breaking alert", "archive", "author", "trending story"),
    "email": ("smtp message", "mailbox", "folder", "spam report", "auto reply", "alias", "bounce", "delivery log"),
    "vault": ("secret", "policy", "token", "lease", "auth method", "audit log", "transit key", "certificate"),
}
ACTIONS = (
    ("list", "List the {o}s in {s}, newest first, with paging."),
    ("get", "Get one {o} from {s} by its id, with all its fields."),
    ("create", "Create a new {o} in {s}."),
    ("update", "Update fields of an existing {o} in {s}."),
    ("delete", "Delete a {o} from {s}; this cannot be undone."),
    ("search", "Search {s} {o}s by keywords and filters."),
    ("archive", "Archive a {o} in {s} so it is hidden but kept."),
    ("export", "Export {s} {o}s as CSV or JSON."),
    ("count", "Count the {o}s in {s} matching a filter."),
    ("watch", "Subscribe to changes of a {o} in {s}."),
    ("copy", "Copy a {o} within {s} or to another account."),
    ("restore", "Restore a deleted or archived {o} in {s}."),
    ("share", "Share a {o} of {s} with another person or team."),
    ("rename", "Rename a {o} in {s}."),
)
PARAMS = {
    "list": ("limit", "cursor"), "get": ("id",), "create": ("name", "body"), "update": ("id", "fields"),
    "delete": ("id", "confirm"), "search": ("query", "limit"), "archive": ("id",), "export": ("format", "filter"),
    "count": ("filter",), "watch": ("id", "webhook_url"), "copy": ("id", "destination"), "restore": ("id",),
    "share": ("id", "recipient"), "rename": ("id", "new_name"),
}


def _slug(text: str) -> str:
    return text.replace(" ", "_")


def generated_tools(n: int) -> list[dict[str, Any]]:
    """``n`` tools as MCP would list them (``name``, ``description``, ``inputSchema``), tagged with their service."""
    out: list[dict[str, Any]] = []
    combos = ((s, o, a) for (a, o, s) in itertools.product(ACTIONS, range(8), SERVICES))
    for (service, obj_no, (action, template)) in combos:
        if len(out) >= n:
            break
        obj = SERVICES[service][obj_no]
        params = {p: {"type": "string"} for p in (*PARAMS[action], f"{_slug(obj)}_type")}
        out.append({"service": service, "name": f"{action}_{_slug(obj)}",
                    "description": template.format(o=obj, s=service.capitalize()),
                    "inputSchema": {"type": "object", "properties": params, "required": list(PARAMS[action][:1])}})
    return out


#: (query, the tool meant). Real servers' tools by their registered names.
HOLDOUT: tuple[tuple[str, str], ...] = (
    ("current time in Tokyo", "mcp__time__get_current_time"),
    ("what time is it in a timezone", "mcp__time__get_current_time"),
    ("get the current time", "mcp__time__get_current_time"),
    ("convert time between timezones", "mcp__time__convert_time"),
    ("convert 3pm New York time to London", "mcp__time__convert_time"),
    ("time zone conversion", "mcp__time__convert_time"),
    ("echo a message back", "mcp__everything__echo"),
    ("repeat the input string", "mcp__everything__echo"),
    ("sum of two numbers", "mcp__everything__get-sum"),
    ("add numbers a and b", "mcp__everything__get-sum"),
    ("environment variables of the server", "mcp__everything__get-env"),
    ("debug MCP server configuration env", "mcp__everything__get-env"),
    ("tiny image logo", "mcp__everything__get-tiny-image"),
    ("return an image", "mcp__everything__get-tiny-image"),
    ("long running operation with progress", "mcp__everything__trigger-long-running-operation"),
    ("progress updates steps duration", "mcp__everything__trigger-long-running-operation"),
    ("annotated message with metadata", "mcp__everything__get-annotated-message"),
    ("resource reference", "mcp__everything__get-resource-reference"),
    ("links to resources", "mcp__everything__get-resource-links"),
    ("gzip compress a file", "mcp__everything__gzip-file-as-resource"),
    ("structured content with output schema", "mcp__everything__get-structured-content"),
    ("turn simulated logging on or off", "mcp__everything__toggle-simulated-logging"),
    ("toggle resource subscription updates", "mcp__everything__toggle-subscriber-updates"),
    ("deep research query on a topic", "mcp__everything__simulate-research-query"),
    ("research operation gather analyze synthesize", "mcp__everything__simulate-research-query"),
    ("github create pull request", "mcp__github__create_pull_request"),
    ("list github issues", "mcp__github__list_issue"),
    ("send a slack message", "mcp__slack__create_message"),
    ("search gmail emails", "mcp__gmail__search_email"),
    ("delete a jira ticket", "mcp__jira__delete_ticket"),
    ("stripe refund", "mcp__stripe__create_refund"),
    ("export stripe invoices", "mcp__stripe__export_invoice"),
    ("kubernetes pods list", "mcp__kubernetes__list_pod"),
    ("restart docker container", "mcp__docker__restore_container"),
    ("weather forecast", "mcp__weather__get_forecast"),
    ("air quality now", "mcp__weather__get_air_quality"),
    ("count open zendesk support tickets", "mcp__zendesk__count_support_ticket"),
    ("create calendar event", "mcp__calendar__create_event"),
    ("archive a notion page", "mcp__notion__archive_page"),
    ("search arxiv papers", "mcp__arxiv__search_paper"),
    ("get a wikipedia article summary", "mcp__wikipedia__get_summary"),
    ("update a hubspot deal", "mcp__hubspot__update_deal"),
    ("watch a sentry issue", "mcp__sentry__watch_issue"),
    ("list s3 buckets", "mcp__s3__list_bucket"),
    ("translate text", "mcp__translate__create_text_translation"),
    ("stock quote", "mcp__finance__get_stock_quote"),
    ("copy a figma component", "mcp__figma__copy_component"),
    ("export datadog dashboards", "mcp__datadog__export_dashboard"),
    ("restore a deleted trello card", "mcp__trello__restore_card"),
    ("create a zoom meeting", "mcp__zoom__create_meeting"),
)
