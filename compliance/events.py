"""What compliance announces to the apps above it, without knowing who listens (receivers are connected in
``lifecycle/receivers.py``). Sent inside the transaction of the change, so a receiver's writes commit or roll back
with it.

- ``assets_scheduled(assets, reason, at)``: the waiting period of ``assets`` began (a delete, retention, an
  erasure request, account closure): what they stand for stops being used.
- ``assets_shredded(assets, at)``: the data keys of ``assets`` were destroyed: what still holds their ciphertext
  (a volume's backend) can go.
"""

from django.dispatch import Signal

assets_scheduled = Signal()
assets_shredded = Signal()
