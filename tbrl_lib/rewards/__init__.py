"""tbrl_lib.rewards"""
