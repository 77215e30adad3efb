"""tbrl_lib.judge_eval"""
