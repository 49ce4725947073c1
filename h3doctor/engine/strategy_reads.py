"""What each fix strategy (engine/strategies.py) reads from the context besides the launch's
words: a rule naming the strategy reads these too (ruleset.reads_of_rule), so a check computes the
derivations they come from. Its own module so that rule loading does not import the strategies
(and the fix machinery) on a clean check's path."""

STRATEGY_READS: dict[str, tuple[str, ...]] = {
    "memory_fit": ("derived.memory.fix_ops", "derived.memory.fix_why"),
    # engine/layout.py: the parallel degrees it weighs together, and whether FA runs
    "parallel_layout": ("derived.fa_really_runs", "args.num_gpus", "args.tp_size", "args.dp_size", "args.pp_size",
                        "args.ulysses_degree", "args.ring_degree", "args.sp_degree", "args.cfg_parallel_degree",
                        "args.enable_cfg_parallel", "args.kv_gather_degree"),
    "config_false_on_command_line": ("derived.config_string_false_keys",),
    "drop_layerwise_unsupported": ("derived.layerwise_unsupported_components",),
}
