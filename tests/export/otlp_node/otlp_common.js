// SPDX-License-Identifier: MIT
// What otlp_check.js and genai_check.js share: their arguments (OTLP_JSON KNOWN_JSON
// [OTLP_PROTOBUF]), failure reporting, a structural diff, and the first checks of a request:
// the JSON decoded by the opentelemetry-proto messages that @opentelemetry/otlp-transformer
// ships and written back unchanged, its protobuf encoding round-tripped, and tokchron's own
// protobuf bytes (when given) decoded to every field of the JSON request.
'use strict';
const fs = require('fs');
const { opentelemetry } = require('@opentelemetry/otlp-transformer/build/src/generated/root');

const Request = opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;
// OTLP/JSON: 64-bit integers as decimal strings, enums as integers. Without defaults the key
// sets of a round trip must match exactly; with them, proto3's omitted zeros are spelled out.
const toJson = { longs: String, enums: Number, json: true, defaults: false };
const withDefaults = { longs: String, enums: Number, json: true, defaults: true };

// A checker named `tool`: fail(where, msg) exits 1, same(where, got, want) compares as JSON.
function checker(tool) {
  const fail = (where, msg) => {
    console.error(`${tool}: FAIL ${where}: ${msg}`);
    process.exit(1);
  };
  const same = (where, got, want) => {
    const g = JSON.stringify(got), w = JSON.stringify(want);
    if (g !== w) fail(where, `got ${g}, want ${w}`);
  };
  return { fail, same };
}

// The first path at which a and b differ (keys in any order, types and values), or null.
function diff(a, b, at = '') {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (a === null || typeof a !== 'object') return Object.is(a, b) ? null : `${at}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  const ka = Object.keys(a), kb = Object.keys(b);
  for (const k of ka) if (!(k in b)) return `${at}.${k}: present in one only (${JSON.stringify(a[k]).slice(0, 80)})`;
  for (const k of kb) if (!(k in a)) return `${at}.${k}: present in one only (${JSON.stringify(b[k]).slice(0, 80)})`;
  for (const k of ka) {
    const d = diff(a[k], b[k], `${at}.${k}`);
    if (d) return d;
  }
  return null;
}

// Reads the arguments and runs the decode checks; returns the parsed inputs and the request as
// written back by the official messages.
function loadRequest(tool) {
  const { fail } = checker(tool);
  const [otlpPath, knownPath, protobufPath] = process.argv.slice(2);
  if (!otlpPath || !knownPath) {
    console.error(`usage: node ${tool}.js OTLP_JSON KNOWN_JSON [OTLP_PROTOBUF]`);
    process.exit(2);
  }
  const input = JSON.parse(fs.readFileSync(otlpPath, 'utf8'));
  const known = JSON.parse(fs.readFileSync(knownPath, 'utf8'));
  const message = Request.fromObject(input);
  const back = Request.toObject(message, toJson);
  const d1 = diff(input, back, 'request');
  if (d1) fail('JSON round trip through opentelemetry-proto', d1);
  const wire = Request.encode(message).finish();
  const d2 = diff(Request.toObject(message, withDefaults),
                  Request.toObject(Request.decode(wire), withDefaults), 'request');
  if (d2) fail('protobuf wire round trip', d2);
  console.log(`${tool}: the request decodes and round-trips (JSON ${JSON.stringify(input).length} bytes, protobuf ${wire.length} bytes)`);
  if (protobufPath) {
    const bytes = fs.readFileSync(protobufPath);
    let fromPb;
    try {
      fromPb = Request.decode(bytes);
    } catch (e) {
      fail('OTLP/HTTP protobuf decode', e.message);
    }
    const d0 = diff(Request.toObject(message, withDefaults), Request.toObject(fromPb, withDefaults), 'request');
    if (d0) fail('OTLP/HTTP protobuf against the JSON request', d0);
    console.log(`${tool}: tokchron's protobuf request (${bytes.length} bytes) decodes to every field of the JSON request`);
  }
  return { input, known, back };
}

module.exports = { checker, diff, loadRequest };
