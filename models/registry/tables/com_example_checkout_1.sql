{{ registry_table('com.example', 'checkout', 1) }}
