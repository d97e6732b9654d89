"""The thinking half of the pack: records, roles, loops, rewards. Never imports ComfyUI."""
