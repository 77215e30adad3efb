"""tbrl_lib.sandbox"""
