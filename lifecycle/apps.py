from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    """Where the apps meet: workflows that span them, and the subscriptions that carry one app's facts to
    another (docs/architecture.md, "Where apps meet")."""

    name = "lifecycle"
    verbose_name = "Lifecycle"

    def ready(self) -> None:
        from lifecycle import receivers  # connects the receivers; importing it has no other effect
        from lifecycle.services.customers import placement_pricing
        from lifecycle.services.volumes import volume_key_read
        from lifecycle.services.workloads import allocation_materials
        from provisioning.services.placing import price_source_set
        from provisioning.services.volumes import volume_key_source_set
        from provisioning.services.workloads import materials_source_set

        del receivers
        materials_source_set(allocation_materials)  # drivers render what workloads name through it
        price_source_set(placement_pricing)  # every placement asks the price book through it
        volume_key_source_set(volume_key_read)  # a driver derives each volume's encryption passphrase from it
