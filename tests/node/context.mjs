#!/usr/bin/env node
// List the messages pi would give the model when it resumes a session file.
//
//   node tests/node/context.mjs SESSION.jsonl [--full]
//
// Uses the installed pi package's own exports (parseSessionEntries, migrateSessionEntries,
// buildSessionContext, convertToLlm), following what SessionManager does on --session:
// the header must be line 1, the leaf is the last non-header entry, and the context is the
// parentId chain from the leaf. The file is only read, never written.
//
// The package is found in $GITCLAW_PI_PACKAGE_DIR, else in
// <repo>/.cache/pi/node_modules/@mariozechner/pi-coding-agent (repo = two levels up).
//
// Prints JSON: {session, header, leafId, model, thinkingLevel, messages: [...], totals}.
// Each message: {index, role, sourceRole, entryId, entryType, blocks: [...], ...};
// with --full also "message" (the converted message as pi hands it to the provider).

import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const args = process.argv.slice(2);
const full = args.includes("--full");
const files = args.filter((a) => !a.startsWith("--"));
if (files.length !== 1) {
	process.stderr.write("usage: node context.mjs SESSION.jsonl [--full]\n");
	process.exit(2);
}
const sessionPath = resolve(files[0]);

const here = dirname(fileURLToPath(import.meta.url));
const packageDir =
	process.env.GITCLAW_PI_PACKAGE_DIR ||
	join(here, "..", "..", ".cache", "pi", "node_modules", "@mariozechner", "pi-coding-agent");
const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
const entryPoint = manifest.exports?.["."]?.import ?? manifest.main;
const pi = await import(pathToFileURL(join(packageDir, entryPoint)).href);
const { parseSessionEntries, migrateSessionEntries, buildSessionContext, convertToLlm } = pi;
for (const [name, fn] of Object.entries({ parseSessionEntries, buildSessionContext, convertToLlm })) {
	if (typeof fn !== "function") {
		process.stderr.write(`pi ${manifest.version} does not export ${name}\n`);
		process.exit(3);
	}
}

const content = readFileSync(sessionPath, "utf8");
const entries = parseSessionEntries(content);
// Like loadEntriesFromFile: no valid header on line 1 means pi would start a new (empty)
// session and truncate the file.
const header = entries[0];
if (!header || header.type !== "session" || typeof header.id !== "string") {
	process.stdout.write(
		`${JSON.stringify({ session: sessionPath, error: "invalid header", messages: [], totals: { messages: 0 } })}\n`,
	);
	process.exit(4);
}
// Older versions are migrated in memory only (pi would rewrite the file; we do not).
if (typeof migrateSessionEntries === "function") migrateSessionEntries(entries);

// Like SessionManager._buildIndex: skip the header, the leaf is the last entry.
const byId = new Map();
let leafId = null;
const body = [];
for (const entry of entries) {
	if (entry.type === "session") continue;
	body.push(entry);
	byId.set(entry.id, entry);
	leafId = entry.id;
}
const context = buildSessionContext(body, leafId, byId);

// Map each built message back to the entry it came from.
const entryByMessage = new Map();
for (const entry of body) {
	if (entry.type === "message" && entry.message) entryByMessage.set(entry.message, entry);
}
const pathIds = new Set();
for (let cur = byId.get(leafId); cur; cur = cur.parentId ? byId.get(cur.parentId) : undefined) {
	if (pathIds.has(cur.id)) break;
	pathIds.add(cur.id);
}
const onPath = body.filter((e) => pathIds.has(e.id));
const lastCompaction = [...onPath].reverse().find((e) => e.type === "compaction");
function sourceEntry(msg) {
	const direct = entryByMessage.get(msg);
	if (direct) return direct;
	if (msg.role === "compactionSummary") return lastCompaction;
	const when = msg.timestamp;
	if (msg.role === "branchSummary") {
		return onPath.find((e) => e.type === "branch_summary" && e.summary === msg.summary && Date.parse(e.timestamp) === when);
	}
	if (msg.role === "custom") {
		return onPath.find((e) => e.type === "custom_message" && e.customType === msg.customType && Date.parse(e.timestamp) === when);
	}
	return undefined;
}

function textLength(value) {
	return typeof value === "string" ? value.length : 0;
}
function describeBlock(block) {
	const out = { type: block?.type };
	switch (block?.type) {
		case "text":
			out.chars = textLength(block.text);
			if (block.textSignature) out.signature = true;
			break;
		case "thinking":
			out.chars = textLength(block.thinking);
			out.signatureChars = textLength(block.thinkingSignature);
			if (block.redacted) out.redacted = true;
			break;
		case "toolCall":
			out.id = block.id;
			out.name = block.name;
			out.argumentsChars = JSON.stringify(block.arguments ?? {}).length;
			break;
		case "image":
			out.mimeType = block.mimeType;
			out.chars = textLength(block.data);
			break;
		default:
			break;
	}
	return out;
}

const messages = [];
const byRole = {};
let chars = 0;
for (const source of context.messages) {
	const entry = sourceEntry(source);
	for (const llm of convertToLlm([source])) {
		const blocks = typeof llm.content === "string" ? [{ type: "text", chars: llm.content.length }] : (llm.content ?? []).map(describeBlock);
		const item = {
			index: messages.length,
			role: llm.role,
			sourceRole: source.role,
			entryId: entry?.id ?? null,
			entryType: entry?.type ?? null,
			blocks,
		};
		if (llm.role === "assistant") {
			Object.assign(item, { api: llm.api, provider: llm.provider, model: llm.model, stopReason: llm.stopReason });
		}
		if (llm.role === "toolResult") {
			Object.assign(item, { toolCallId: llm.toolCallId, toolName: llm.toolName, isError: llm.isError });
		}
		if (full) item.message = llm;
		messages.push(item);
		byRole[llm.role] = (byRole[llm.role] ?? 0) + 1;
		chars += blocks.reduce((n, b) => n + (b.chars ?? 0) + (b.argumentsChars ?? 0), 0);
	}
}

const report = {
	session: sessionPath,
	piVersion: manifest.version,
	header,
	leafId,
	model: context.model,
	thinkingLevel: context.thinkingLevel,
	messages,
	totals: {
		entries: body.length,
		pathEntries: onPath.length,
		agentMessages: context.messages.length,
		messages: messages.length,
		byRole,
		chars,
	},
};
process.stdout.write(`${JSON.stringify(report)}\n`);
