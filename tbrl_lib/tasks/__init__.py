"""tbrl_lib.tasks"""
