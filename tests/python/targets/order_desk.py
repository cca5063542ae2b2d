"""Frames full of values, as a new user's program has them: an order desk
handles an order (a dict with a customer, items and a coupon), prices it
and then waits for the warehouse (a read that never returns), three calls
deep below ``main``.

The main thread blocks in ``wait_for_warehouse`` (innermost), called by
``price_order``, called by ``handle``; the record (desk.json) holds, for
each of these frames, innermost first, its function and its locals as
``{name: repr(value)}`` (taken in the frame itself with ``locals()`` just
before the next call; every value is a builtin type, so that repr() is
what pyframes shows), and the handshake (targets/_common.py) the stack.
"""

import _common

H = _common.Harness.from_argv()
frames = []


def keep(function, values):
    frames.insert(0, {"function": function,
                      "locals": {k: repr(v) for k, v in values.items()}})


def wait_for_warehouse(sku, quantity):
    keep("wait_for_warehouse", locals())
    H.publish_truth("desk.json", lambda: {"frames": frames})


def price_order(order, discount):
    subtotal = sum(item["price"] * item["qty"] for item in order["items"])
    total = round(subtotal * (1 - discount), 2)
    first = order["items"][0]
    keep("price_order", locals())
    wait_for_warehouse(first["sku"], first["qty"])
    return total


def handle(order_id):
    order = {"id": order_id, "customer": "Ada Lovelace",
             "items": [{"sku": "TEA-42", "qty": 3, "price": 4.5},
                       {"sku": "MUG-7", "qty": 1, "price": 12.0}],
             "coupon": None}
    discount = 0.1
    keep("handle", locals())
    return price_order(order, discount)


def main():
    handle(1017)


main()  # publish_truth writes the record, then blocks in publish_and_block
