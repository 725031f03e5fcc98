"""``ember.Size``: the tuple subclass that ``tensor.shape`` returns."""


class Size(tuple):
    """A tensor's shape; a tuple that prints as ``ember.Size([2, 3])``.

    >>> import ember
    >>> ember.zeros(2, 3).shape
    ember.Size([2, 3])
    """

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        res = tuple.__getitem__(self, key)
        return Size(res) if isinstance(key, slice) else res

    def __add__(self, other):
        return Size(tuple.__add__(self, other))
