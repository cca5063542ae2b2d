"""Target of test_frame_cache.py: a thread state that runs no Python code.

PyThreadState_New gives the interpreter a second state for this thread,
never made current: it stays in the interpreter's list with only its base
frame on top, as every state is when it is freed.  Writes the state's
address and "ready", then blocks reading stdin.
"""
import ctypes
import os
import sys

api = ctypes.pythonapi
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api.PyThreadState_New.restype = ctypes.c_void_p
api.PyThreadState_New.argtypes = [ctypes.c_void_p]
idle = api.PyThreadState_New(api.PyInterpreterState_Get())
os.write(1, b"%d\nready\n" % idle)
sys.stdin.read()
