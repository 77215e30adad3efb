"""tbrl_lib.evaluate"""
