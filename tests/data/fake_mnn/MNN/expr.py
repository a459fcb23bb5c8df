import numpy as np

NHWC, NCHW, NC4HW4 = "NHWC", "NCHW", "NC4HW4"


class PrecisionMode:
    High = Normal = Low = 0


class Var:
    data_format = NHWC

    def __init__(self, value):
        self.value = np.asarray(value)

    def read(self):
        return self.value


def const(value, shape, data_format=NHWC):
    return np.asarray(value).reshape(shape)


def convert(var, data_format):
    return var
