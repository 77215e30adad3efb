"""tbrl_lib.metrics"""
