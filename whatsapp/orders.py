"""An order from the organisation's WhatsApp catalog (`order`, issue 27): the customer's message
is the products and their quantities as text — each product by its price-list name when the
organisation's price list has an item whose code is the catalog's retailer id (the SKU), else
by that id — asking for a quote, with the note they added to the cart. The turn reads it like
any text (the quote and price tools take it from there); the cart as sent is kept in the
message's trace (`whatsapp.order`, whatsapp/webhook.py). Only the receiving organisation's price
list is read."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from business.models import PriceItem
from common.wording import say
from copilot.models import Conversation
from whatsapp.payload import Incoming


def ordered(conversation: Conversation, incoming: Incoming, language: str) -> str:
    """ "¿Cuánto sale este pedido del catálogo? 2 × Carga de gas; 1 × …" and the
    cart's note on the next line ("" for an order with no product)."""
    if not incoming.items:
        return ""
    codes = [product for product, *_rest in incoming.items]
    names = {
        code: (name_en if language == "en" and name_en else name)
        for code, name, name_en in PriceItem.objects.filter(
            organisation_id=conversation.organisation_id, code__in=codes
        ).values_list("code", "name", "name_en")
    }  # fmt: skip
    lines = "; ".join(
        f"{quantity} × {names.get(product, product)}" if quantity else names.get(product, product)
        for product, quantity, _price, _currency in incoming.items
    )
    text = say(language, _("How much is this order from your catalog? %(items)s"),
               items=lines)  # fmt: skip
    return f"{text}\n{incoming.text.strip()}" if incoming.text.strip() else text
