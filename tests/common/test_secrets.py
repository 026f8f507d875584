"""One encrypted-field descriptor for every secret a model stores."""

from __future__ import annotations

import pytest

from common.secrets import decrypt, digest
from llm.models import ProviderSettings
from tests.conftest import Cast
from whatsapp.models import WhatsAppAccount

pytestmark = pytest.mark.django_db


def test_assigning_a_secret_stores_only_its_token(cast: Cast) -> None:
    row = ProviderSettings(organisation=cast.org)
    assert row.api_key == "" and row.api_key_encrypted == ""
    row.api_key = "  sk-own  "
    row.save()
    stored = ProviderSettings.objects.get(pk=row.pk)
    assert "sk-own" not in stored.api_key_encrypted
    assert decrypt(stored.api_key_encrypted) == "sk-own" and stored.api_key == "sk-own"


def test_a_digested_secret_can_be_found_again(cast: Cast) -> None:
    account = WhatsAppAccount(organisation=cast.org)
    account.phone_number_id = "1100220033 "
    account.save()
    found = WhatsAppAccount.objects.get(phone_number_digest=digest("1100220033"))
    assert found.phone_number_id == "1100220033"
    assert "1100220033" not in found.phone_number_id_encrypted


def test_an_unreadable_token_reads_as_no_secret(cast: Cast) -> None:
    row = ProviderSettings(organisation=cast.org, api_key_encrypted="not-a-fernet-token")
    assert row.api_key == ""
