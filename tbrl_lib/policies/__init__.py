"""tbrl_lib.policies"""
