"""Instances of the program's own classes in its frames, as a new user's
billing code has them: a Customer (attributes in its __dict__, among them
an Address instance and a list), an Order with __slots__ (holding the
Customer and a list of Line instances), a Line list as a local.

The main thread blocks in ``wait_for_payment`` (innermost), called by
``bill``, called by ``handle``.  The record (customers.json) holds, for
each of these frames, innermost first, its function and its locals, each
``{"repr": object.__repr__(value) for an instance, else repr(value),
"attrs": {name: repr(attribute)} (vars(), or the __slots__ set in the
type's own order: what the instance holds; null for no instance), "items": [[repr, attrs], ...] (a
list's instances)}``, and the text of a few expressions py-print reads
(``customer.__dict__`` is repr(vars(customer))).  Every attribute holds a
builtin value or an instance without a __repr__ of its own, so that
repr(vars(x)) is what a reader shows without running code.
"""

import types

import _common

H = _common.Harness.from_argv()
frames = []


class Address(object):
    def __init__(self, street, city):
        self.street = street
        self.city = city


class Customer(object):
    def __init__(self, name, email, address):
        self.name = name
        self.email = email
        self.address = address
        self.tags = ["vip", "newsletter"]
        self.balance = 12.5


class Line(object):
    def __init__(self, sku, qty, price):
        self.sku = sku
        self.qty = qty
        self.price = price


class Order(object):
    __slots__ = ("number", "customer", "lines")

    def __init__(self, number, customer, lines):
        self.number = number
        self.customer = customer
        self.lines = lines


def _instance(value):
    return not isinstance(value, (type(None), bool, int, float, str, bytes, list, tuple,
                                  dict, set))


def _attrs(value):
    if not _instance(value):
        return None
    if hasattr(value, "__dict__"):
        return {k: _repr(v) for k, v in vars(value).items()}
    # the slots in the type's own order (CPython sorts __slots__' names)
    slots = [k for k, d in vars(type(value)).items() if isinstance(d, types.MemberDescriptorType)]
    return {k: _repr(getattr(value, k)) for k in slots if hasattr(value, k)}


def _repr(value):
    return object.__repr__(value) if _instance(value) else repr(value)


def keep(function, values):
    frames.insert(0, {"function": function, "locals": {
        k: {"repr": _repr(v), "attrs": _attrs(v),
            "items": [[_repr(x), _attrs(x)] for x in v] if isinstance(v, list) else None}
        for k, v in values.items()}})


def wait_for_payment(customer, amount):
    due = round(amount * 1.2, 2)
    keep("wait_for_payment", locals())
    H.publish_truth("customers.json", record)


def bill(customer, order):
    lines = order.lines
    amount = sum(line.qty * line.price for line in lines)
    keep("bill", locals())
    wait_for_payment(customer, amount)


def handle(number):
    home = Address("12 Analytical Row", "London")
    customer = Customer("Ada Lovelace", "ada@example.org", home)
    order = Order(number, customer, [Line("TEA-42", 3, 4.5), Line("MUG-7", 1, 12.0)])
    _kept.update(customer=customer, order=order)
    keep("handle", locals())
    bill(customer, order)


def record():
    """The frames, and py-print's expressions (read in ``bill``'s frame)."""
    return {"frames": frames, "print": {
        "customer.__dict__": repr(_customer_vars()),
        "customer.address.city": repr(_customer().address.city),
        "customer.address": _repr(_customer().address),
        "order.customer.name": repr(_customer().name),
        "order.lines[1].sku": repr(_order().lines[1].sku),
        "customer.__dict__['tags']": repr(_customer().tags),
        "order.customer.__dict__": repr(_customer_vars()),
        "customer.address.__dict__": repr(vars(_customer().address)),
    }}


_kept = {}


def _customer():
    return _kept["customer"]


def _order():
    return _kept["order"]


def _customer_vars():
    return {k: _Plain(v) for k, v in vars(_customer()).items()}


class _Plain(object):
    """A value repr()'d as a reader shows it (an instance's default repr)."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return _repr(self.value)


def main():
    handle(1017)


main()  # publish_truth writes the record, then blocks in publish_and_block
