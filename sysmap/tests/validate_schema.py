#!/usr/bin/env python3
"""Validates a JSON document against the subset of JSON Schema that
doc/sysquery.schema.json uses (standard library only).

Supported: $ref to "#/...", type (name or list), properties, required,
additionalProperties (boolean or schema), items, enum, minimum, pattern.
A schema keyword outside this subset is an error, so the schema cannot
silently use something this validator ignores.

usage: validate_schema.py SCHEMA [DOCUMENT]   (document from stdin if absent)
Prints "valid" or one line per error ("PATH: what") and exits 0 or 1."""
import json
import re
import sys

KNOWN = {"$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties",
         "required", "additionalProperties", "items", "enum", "minimum", "pattern"}

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def resolve(root, ref):
    if not ref.startswith("#/"):
        raise ValueError("only local $ref supported: " + ref)
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def validate(root, schema, value, path, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError("%s: schema uses unsupported keywords %s" % (path, sorted(unknown)))
    if "$ref" in schema:
        validate(root, resolve(root, schema["$ref"]), value, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            errors.append("%s: %s is not of type %s" % (path, json.dumps(value)[:60], "/".join(types)))
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %s is not one of %s" % (path, json.dumps(value), json.dumps(schema["enum"])))
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        errors.append("%s: %s is below the minimum %s" % (path, value, schema["minimum"]))
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append("%s: %s does not match %s" % (path, json.dumps(value), schema["pattern"]))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errors.append("%s: required property %s is missing" % (path, key))
        for key, item in value.items():
            if key in props:
                validate(root, props[key], item, "%s/%s" % (path, key), errors)
            elif schema.get("additionalProperties") is False:
                errors.append("%s: property %s is not allowed" % (path, key))
            elif isinstance(schema.get("additionalProperties"), dict):
                validate(root, schema["additionalProperties"], item, "%s/%s" % (path, key), errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(root, schema["items"], item, "%s/%d" % (path, i), errors)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    try:
        if len(sys.argv) == 3:
            with open(sys.argv[2]) as f:
                doc = json.load(f)
        else:
            doc = json.load(sys.stdin)
    except ValueError as e:
        print("document is not JSON: %s" % e)
        return 1
    errors = []
    validate(schema, schema, doc, "", errors)
    for e in errors:
        print(e)
    if not errors:
        print("valid")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
