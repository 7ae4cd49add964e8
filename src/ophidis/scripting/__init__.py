"""Lua scripting: the engine and redis.call (engine.py), the cjson /
cmsgpack / struct / bit libraries (libs.py), Redis's sandbox (sandbox.lua).
The commands (EVAL, SCRIPT, FUNCTION) are in commands/scripting.py."""
